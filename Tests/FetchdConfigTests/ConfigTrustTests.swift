@testable import FetchdConfig
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Config files and the handler folder must be writable by fetchd's own user (or root) alone:
/// otherwise the configuration is rejected as a whole, naming the file, its mode or owner, and
/// the fix.
@Suite("ConfigTrust")
struct ConfigTrustTests {
    /// A main file and one handler file in a fresh folder.
    static func setUp() throws -> (folder: TemporaryDirectory, main: String, handler: String) {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        let main = try folder.write("heartbeat = \"15m\"\n", to: "fetchd.toml")
        let handler = try folder.write("[[handler]]\nname = \"a\"\nkind = \"exec\"\ncommand = [\"/bin/true\"]\n",
                                       to: "handlers.d/a.toml")
        chmod(main, 0o644)
        chmod(handler, 0o644)
        chmod(folder.file("handlers.d"), 0o755)
        return (folder, main, handler)
    }

    /// The problems `ConfigLoader.load` threw, or none.
    static func rejection(_ main: String) -> [ConfigDiagnostic] {
        do {
            _ = try ConfigLoader.load(mainFile: main)
            return []
        } catch {
            return error.diagnostics
        }
    }

    @Test func privateFilesAreTrusted() throws {
        let (folder, main, _) = try Self.setUp()
        defer { folder.remove() }
        #expect(Self.rejection(main).isEmpty)
        #expect(try ConfigLoader.load(mainFile: main).handlers.map(\.name) == ["a"])
    }

    @Test func aFileEveryUserCanWriteIsRejected() throws {
        let (folder, main, handler) = try Self.setUp()
        defer { folder.remove() }
        chmod(handler, 0o666)
        let problems = Self.rejection(main)
        #expect(problems.count == 1 && problems[0].file == handler, "\(problems)")
        #expect(problems.first?.message.contains("writable by every user (mode 666)") == true, "\(problems)")
        #expect(problems.first?.message.contains("chmod go-w \(handler)") == true)
        chmod(handler, 0o644)
        chmod(main, 0o646)
        #expect(Self.rejection(main).first?.file == main)
    }

    @Test func aHandlerFolderEveryUserCanWriteIsRejected() throws {
        let (folder, main, _) = try Self.setUp()
        defer { folder.remove() }
        chmod(folder.file("handlers.d"), 0o777)
        #expect(Self.rejection(main).first?.file == folder.file("handlers.d"))
    }

    @Test func underRootGroupWritableOrAnotherOwnerIsRejected() throws {
        let (folder, main, handler) = try Self.setUp()
        defer { folder.remove() }
        // As any user the group may write; as root (euid 0 given here) it may not.
        chmod(handler, 0o664)
        #expect(ConfigTrust.problem(at: handler, euid: getuid() == 0 ? 12345 : getuid()) == nil)
        #expect(ConfigTrust.problem(at: handler, euid: 0)?.message.contains("writable by its group (mode 664)") == true)
        chmod(handler, 0o644)
        // Owned by someone else: only root can make that file here.
        if geteuid() == 0 {
            chown(handler, 65534, 65534)
            let problem = Self.rejection(main).first
            #expect(problem?.file == handler && problem?.message.contains("owned by uid 65534") == true, "\(String(describing: problem))")
        }
    }
}
