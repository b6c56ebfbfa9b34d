@testable import FetchdConfig
import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The main file's drop-ins (`fetchd.toml.d/*.toml`): read after it in name order, a later file
/// winning key by key, each problem at its own file, line and key, so an administrator's settings
/// never need an edit of the package's conffile.
@Suite("Main file drop-ins")
struct MainDropInTests {
    /// A folder with `fetchd.toml` holding `main` and a drop-in per entry of `dropIns`.
    static func setUp(main: String, dropIns: [String: String]) throws -> (folder: TemporaryDirectory, main: String) {
        let folder = try TemporaryDirectory("fetchd-main-dropins")
        let path = try folder.write(main, to: "fetchd.toml")
        for (name, text) in dropIns { _ = try folder.write(text, to: "fetchd.toml.d/\(name)") }
        return (folder, path)
    }

    @Test func dropInsOverrideTheMainFileKeyByKeyInNameOrder() throws {
        let (folder, main) = try Self.setUp(
            main: "heartbeat = \"15m\"\nmax_concurrent = 3\nalert_after = 5\n",
            dropIns: ["10-alerts.toml": "alert_after = 2\non_failure = [\"/bin/true\"]\n",
                      "20-later.toml": "heartbeat = \"2m\"\n",
                      ".hidden.toml": "heartbeat = \"1h\"\n", "notes.txt": "heartbeat = 1\n"])
        defer { folder.remove() }
        let loaded = try ConfigLoader.load(mainFile: main)
        #expect(loaded.daemon.heartbeatSeconds == 120, "the later drop-in wins")
        #expect(loaded.daemon.maxConcurrent == 3, "a key no drop-in sets keeps the main file's value")
        #expect(loaded.daemon.alertAfter == 2 && loaded.daemon.onFailure == ["/bin/true"])
        // Unsetting in a later drop-in: on_failure = [] means none.
        _ = try folder.write("on_failure = []\n", to: "fetchd.toml.d/30-quiet.toml")
        #expect(try ConfigLoader.load(mainFile: main).daemon.onFailure == nil)
        // Without a main file (the packaged path before one exists), drop-ins still apply.
        try FileManager.default.removeItem(atPath: main)
        #expect(try ConfigLoader.load(mainFile: main, requireMainFile: false).daemon.heartbeatSeconds == 120)
    }

    @Test func aProblemInADropInNamesItsFileLineAndKeyAndStopsTheStart() throws {
        let (folder, main) = try Self.setUp(
            main: "heartbeat = \"15m\"\n",
            dropIns: ["50-admin.toml": "# the administrator's\nmax_concurent = 4\nheartbeat = \"soon\"\n",
                      "60-handlers.toml": "[[handler]]\nname = \"x\"\nkind = \"http\"\nurl = \"https://example.org/\"\n"])
        defer { folder.remove() }
        let dropIn = folder.file("fetchd.toml.d/50-admin.toml")
        let problems = ConfigTrustTests.rejection(main)
        #expect(problems.contains { $0.file == dropIn && $0.line == 2 && $0.key == "max_concurent"
            && $0.message.contains("did you mean \"max_concurrent\"") }, "\(problems)")
        #expect(problems.contains { $0.file == dropIn && $0.line == 3 && $0.key == "heartbeat" }, "\(problems)")
        #expect(problems.contains { $0.file == folder.file("fetchd.toml.d/60-handlers.toml") && $0.line == 1
            && $0.key == "handler" && $0.message.contains("settings only") }, "\(problems)")
        // --check-config on the drop-in itself examines the whole configuration, as fetchd reads it.
        let examined = ConfigLoader.examine(path: dropIn)
        #expect(examined.exitStatus == 78 && examined.diagnostics.contains { $0.file == dropIn && $0.line == 3 },
                "\(examined.diagnostics)")
        #expect(ConfigLoader.examine(path: main).diagnostics.count == examined.diagnostics.count)
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another user"))
    func aDropInAnotherUserMayWriteIsRefused() throws {
        let (folder, main) = try Self.setUp(main: "", dropIns: ["10-x.toml": "heartbeat = \"2m\"\n"])
        defer { folder.remove() }
        let dropIn = folder.file("fetchd.toml.d/10-x.toml")
        chmod(dropIn, 0o644)
        chmod(folder.file("fetchd.toml.d"), 0o755)
        #expect(ConfigTrustTests.rejection(main).isEmpty)
        chown(dropIn, 65534, 65534)
        let problems = ConfigTrustTests.rejection(main)
        #expect(problems.count == 1 && problems.first?.file == dropIn && problems.first?.message.contains("uid 65534") == true,
                "\(problems)")
    }
}
