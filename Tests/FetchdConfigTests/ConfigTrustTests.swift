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

    @Test func aGroupWithOtherMembersOrAnotherOwnerIsRejected() throws {
        let (folder, main, handler) = try Self.setUp()
        defer { folder.remove() }
        // Whatever user fetchd runs as, a group with members besides the owner may not write:
        // group daemon (gid 1) holds user daemon, the file is root's.
        chmod(handler, 0o664)
        chown(handler, 0, 1)
        for euid: uid_t in [0, 12345] {
            guard case .untrusted(let why) = TrustedReader(euid: euid).read(handler) else {
                Issue.record("group-writable file accepted as uid \(euid)")
                continue
            }
            #expect(why.contains("writable by its group (gid 1, mode 664)") && why.contains("chmod g-w"), "\(why)")
        }
        chmod(handler, 0o644)
        // Owned by someone else: only root can make that file here.
        if geteuid() == 0 {
            chown(handler, 65534, 65534)
            let problem = Self.rejection(main).first
            #expect(problem?.file == handler && problem?.message.contains("owned by uid 65534") == true, "\(String(describing: problem))")
        }
    }

    /// A group whose only member is the owner (a user private group, as a `umask 002`
    /// checkout has) may write: nobody else is in it.
    @Test func aGroupOfTheOwnerAloneMayWrite() throws {
        let (folder, main, handler) = try Self.setUp()
        defer { folder.remove() }
        // Root's own group holds root alone on Debian; daemon's holds daemon alone.
        try #require(ConfigTrust.groupIsPrivate(0, owner: 0) && ConfigTrust.groupIsPrivate(1, owner: 1))
        #expect(!ConfigTrust.groupIsPrivate(1, owner: 0) && !ConfigTrust.groupIsPrivate(0, owner: 1))
        chmod(handler, 0o664)
        chmod(folder.file("handlers.d"), 0o775)
        #expect(Self.rejection(main).isEmpty)
    }
}
