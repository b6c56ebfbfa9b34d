@testable import FetchdConfig
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Configuration is checked through the descriptor it is read from, and with every folder
/// above it: two users here, root (the tests' own) and nobody (65534) as the other.
@Suite("ConfigTrust paths", .enabled(if: geteuid() == 0, "needs root to give files to another user"))
struct ConfigTrustPathTests {
    /// A main file in `sub` of a fresh folder, with one handler file in `sub/handlers.d`.
    static func setUp() throws -> (folder: TemporaryDirectory, sub: String, main: String, handler: String) {
        let folder = try TemporaryDirectory("fetchd-trust-paths")
        let main = try folder.write("heartbeat = \"15m\"\n", to: "sub/fetchd.toml")
        let handler = try folder.write("[[handler]]\nname = \"a\"\nkind = \"exec\"\ncommand = [\"/bin/true\"]\n",
                                       to: "sub/handlers.d/a.toml")
        for (path, mode) in [(main, 0o644), (handler, 0o644), (folder.file("sub"), 0o755),
                             (folder.file("sub/handlers.d"), 0o755)] {
            chmod(path, mode_t(mode))
        }
        return (folder, folder.file("sub"), main, handler)
    }

    /// `path` as the kernel names it (folders above are named so in messages).
    static func real(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    @Test func aConfigFileReplacedByALinkIsRefused() throws {
        let (folder, _, main, handler) = try Self.setUp()
        defer { folder.remove() }
        #expect(ConfigTrustTests.rejection(main).isEmpty)
        // A link to another user's file in place of the handler file: refused as a link,
        // without reading what it points to.
        let other = try folder.write("[[handler]]\nname = \"evil\"\nkind = \"exec\"\ncommand = [\"/bin/true\"]\n",
                                     to: "other.toml")
        chown(other, 65534, 65534)
        unlink(handler)
        symlink(other, handler)
        var problems = ConfigTrustTests.rejection(main)
        #expect(problems.count == 1 && problems.first?.file == handler, "\(problems)")
        #expect(problems.first?.message.contains("a symbolic link") == true, "\(problems)")
        // A link is refused even to a file fetchd would trust: the main file too.
        unlink(handler)
        let kept = try folder.write("heartbeat = \"15m\"\n", to: "kept.toml")
        chmod(kept, 0o644)
        unlink(main)
        symlink(kept, main)
        problems = ConfigTrustTests.rejection(main)
        #expect(problems.first?.file == main && problems.first?.message.contains("a symbolic link") == true, "\(problems)")
        #expect(ConfigLoader.examine(path: main).exitStatus == 78)
    }

    @Test func aHandlerFolderThatIsALinkIsRefused() throws {
        let (folder, sub, main, _) = try Self.setUp()
        defer { folder.remove() }
        rename(sub + "/handlers.d", folder.file("elsewhere"))
        symlink(folder.file("elsewhere"), sub + "/handlers.d")
        let problems = ConfigTrustTests.rejection(main)
        #expect(problems.first?.file == sub + "/handlers.d" && problems.first?.message.contains("symbolic link") == true,
                "\(problems)")
    }

    @Test func aFolderAboveAnotherUserMayWriteIsRefused() throws {
        let (folder, sub, main, _) = try Self.setUp()
        defer { folder.remove() }
        // Owned by another user: it could rename fetchd.toml away and put its own there.
        chown(sub, 65534, 65534)
        var problems = ConfigTrustTests.rejection(main)
        #expect(problems.first?.file == main, "\(problems)")
        #expect(problems.first?.message.contains("in the folder \(Self.real(sub)), owned by uid 65534") == true, "\(problems)")
        #expect(ConfigLoader.examine(path: main).exitStatus == 78)
        // Root's, but every user may write it (no sticky bit).
        chown(sub, 0, 0)
        chmod(sub, 0o777)
        problems = ConfigTrustTests.rejection(main)
        #expect(problems.first?.message.contains("in the folder \(Self.real(sub)), writable by every user (mode 777)") == true,
                "\(problems)")
        // The folder above the handler folder counts for it too, and so do folders further up.
        chmod(sub, 0o755)
        chown(folder.path, 65534, 65534)
        problems = ConfigTrustTests.rejection(main)
        #expect(problems.map(\.file) == [main, sub + "/handlers.d"], "\(problems)")
        #expect(problems.allSatisfy { $0.message.contains("the folder \(Self.real(folder.path)), owned by uid 65534") }, "\(problems)")
    }

    @Test func aStickyFolderIsAcceptedOnlyWhenRootOwnsIt() throws {
        let (folder, sub, main, _) = try Self.setUp()
        defer { folder.remove() }
        // As /tmp: everyone may create, nobody may rename another's entry.
        chmod(sub, 0o1777)
        #expect(ConfigTrustTests.rejection(main).isEmpty)
        chown(sub, 65534, 65534)
        chmod(sub, 0o1777)
        let problems = ConfigTrustTests.rejection(main)
        #expect(problems.first?.message.contains("owned by uid 65534") == true, "\(problems)")
        // The handler folder itself, sticky or not, may not be world-writable: anyone could add a file.
        chown(sub, 0, 0)
        chmod(sub, 0o755)
        chmod(sub + "/handlers.d", 0o1777)
        #expect(ConfigTrustTests.rejection(main).first?.file == sub + "/handlers.d")
    }

    /// In a user namespace that leaves root out (the user unit's PrivateUsers=yes), root's
    /// files and folders show as the overflow uid: taken as root's, still held to their modes.
    @Test func anUnmappedOwnerCountsAsRootInAUserNamespace() throws {
        let (folder, sub, main, _) = try Self.setUp()
        defer { folder.remove() }
        chown(sub, 65534, 65534)
        chown(main, 65534, 65534)
        guard case .text = TrustedReader(euid: 4242, unmapped: 65534).read(main) else {
            Issue.record("an unmapped owner was refused")
            return
        }
        chmod(sub, 0o1777)
        #expect({ if case .text = TrustedReader(euid: 4242, unmapped: 65534).read(main) { true } else { false } }(),
                "a sticky folder shown with the overflow uid is root's")
        chmod(sub, 0o777)
        guard case .untrusted(let why) = TrustedReader(euid: 4242, unmapped: 65534).read(main) else {
            Issue.record("a folder every user may write was accepted")
            return
        }
        #expect(why.contains("writable by every user (mode 777)"), "\(why)")
        // Outside such a namespace the same owner is another user.
        chmod(sub, 0o755)
        guard case .untrusted(let owner) = TrustedReader(euid: 4242, unmapped: nil).read(main) else {
            Issue.record("another user's folder was accepted")
            return
        }
        #expect(owner.contains("owned by uid 65534"), "\(owner)")
    }

    /// A file swapped for another user's right after the check: what is read is what was
    /// checked, as it is read from the same descriptor.
    @Test func aSwapAfterTheCheckIsNotRead() throws {
        let (folder, _, main, _) = try Self.setUp()
        defer { folder.remove() }
        let swapped = try folder.write("heartbeat = \"1m\"\n", to: "swapped.toml")
        chown(swapped, 65534, 65534)
        let reader = TrustedReader()
        var swaps = 0
        reader.afterCheck = { path in
            swaps += 1
            #expect(path == main)
            #expect(rename(swapped, main) == 0)
        }
        guard case .text(let text) = reader.read(main) else {
            Issue.record("the checked file was not read")
            return
        }
        #expect(swaps == 1 && text == "heartbeat = \"15m\"\n")
        // Read again, the swapped file is refused.
        guard case .untrusted(let why) = TrustedReader().read(main) else {
            Issue.record("another user's file was read")
            return
        }
        #expect(why.contains("owned by uid 65534"))
    }
}
