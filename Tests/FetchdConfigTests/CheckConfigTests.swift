import FetchdConfig
import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

/// What `fetchd --check-config` and `fetchctl check-config` promise (`ConfigLoader.examine`):
/// every problem in one run, each marked with what it does to fetchd, the trust checks fetchd
/// applies, paths as fetchd reads them, URLs as libcurl parses them.
struct CheckConfigTests {
    private static let badHandler = "[[handler]]\nname = \"bad\"\nkind = \"http\"\nurl = \"ftp://example.invalid/\"\n"

    /// A problem in the main file does not hide those of the handler files.
    @Test func aMainFileProblemDoesNotHideTheHandlerFiles() throws {
        let folder = try TemporaryDirectory("check-config")
        defer { folder.remove() }
        let main = try folder.write("max_concurrent = \"four\"\n", to: "fetchd.toml")
        _ = try folder.write(Self.badHandler, to: "handlers.d/bad.toml")
        let examination = ConfigLoader.examine(path: main)
        #expect(examination.diagnostics.map(\.effect) == [.stopsStart, .skipsHandler], "\(examination.diagnostics)")
        #expect(examination.diagnostics.last?.file.hasSuffix("handlers.d/bad.toml") == true)
        #expect(!examination.wouldStart && examination.exitStatus == 78)
        let lines = examination.lines(checked: main)
        #expect(lines[0].hasSuffix("(fetchd does not start)") && lines[1].hasSuffix("(handler \"bad\" is left out)"), "\(lines)")
        #expect(throws: ConfigLoadError.self) { try ConfigLoader.load(mainFile: main) }
    }

    /// A handler file checked alone gets the trust checks fetchd applies to it at start: one
    /// that others may write is refused, as fetchd would refuse to start with it.
    @Test func aHandlerFileCheckedAloneIsCheckedForTrust() throws {
        let folder = try TemporaryDirectory("check-config")
        defer { folder.remove() }
        let file = try folder.write("[[handler]]\nname = \"ok\"\nkind = \"exec\"\ncommand = [\"/bin/true\"]\n", to: "handlers.d/ok.toml")
        #expect(ConfigLoader.examine(path: file).diagnostics.isEmpty)
        chmod(file, 0o666)
        let examination = ConfigLoader.examine(path: file)
        #expect(examination.diagnostics.first?.effect == .stopsStart, "\(examination.diagnostics)")
        #expect(examination.exitStatus == 78)
    }

    /// A relative path is taken from the working directory, as the kernel takes it (the check
    /// from inside a handlers.d folder runs as a process in EndToEndTests).
    @Test func aRelativePathIsTakenFromTheWorkingDirectory() {
        // Foundation's own resolution, not the expression PathName.absolute is written with.
        #expect(PathName.absolute("a/b.toml") == URL(fileURLWithPath: "a/b.toml").standardizedFileURL.path)
        #expect(PathName.absolute("./b.toml") == URL(fileURLWithPath: "./b.toml").standardizedFileURL.path)
        #expect(PathName.absolute("/etc/fetchd/fetchd.toml") == "/etc/fetchd/fetchd.toml")
    }

    /// A URL libcurl cannot parse (a space in it) is refused at load time, not at every fetch.
    @Test func urlsAreCheckedByLibcurl() throws {
        let folder = try TemporaryDirectory("check-config")
        defer { folder.remove() }
        let file = try folder.write("""
            [[handler]]
            name = "spaced"
            kind = "http"
            url = "https://example.com/a b"

            [[handler]]
            name = "port"
            kind = "transfer"
            url = "https://example.com:99999/file.iso"

            [[handler]]
            name = "fine"
            kind = "http"
            url = "https://example.com/a%20b?x=1"
            """, to: "handlers.d/urls.toml")
        let diagnostics = ConfigLoader.examine(path: file).diagnostics
        #expect(diagnostics.map(\.handler) == ["spaced", "port"], "\(diagnostics)")
        #expect(diagnostics.allSatisfy { $0.key == "url" && $0.message.contains("libcurl cannot parse") })
        #expect(diagnostics.first?.line == 4)
    }

    /// `control_group` must name a group: fetchd would not start without it.
    @Test func theControlGroupMustExist() throws {
        let folder = try TemporaryDirectory("check-config")
        defer { folder.remove() }
        let main = try folder.write("control_group = \"no-such-group-fetchd-test\"\n", to: "fetchd.toml")
        let examination = ConfigLoader.examine(path: main)
        #expect(examination.diagnostics.map(\.key) == ["control_group"] && examination.exitStatus == 78,
                "\(examination.diagnostics)")
        let fine = try folder.write("control_group = \"root\"\n", to: "fetchd.toml")
        #expect(ConfigLoader.examine(path: fine).diagnostics.isEmpty)
    }

    /// A relative `ca_file` (or `push_token_file`) is taken from the folder of the file that
    /// names it, whatever the working directory: the daemon (started in /) and a check from a
    /// shell read the same file.
    @Test func aRelativePathInAFileIsTakenFromItsFolder() throws {
        let folder = try TemporaryDirectory("check-config")
        defer { folder.remove() }
        let certificate = try folder.write("-----BEGIN CERTIFICATE-----\n", to: "handlers.d/ca.pem")
        _ = try folder.write("[[handler]]\nname = \"tls\"\nkind = \"http\"\nurl = \"https://example.com/\"\nca_file = \"ca.pem\"\n",
                             to: "handlers.d/tls.toml")
        let loaded = try ConfigLoader.load(mainFile: folder.file("fetchd.toml"), requireMainFile: false)
        #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
        #expect(loaded.handler(named: "tls")?.request?.caFile == certificate)
    }
}
