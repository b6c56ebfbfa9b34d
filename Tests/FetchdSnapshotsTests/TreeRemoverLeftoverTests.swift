import FetchdSnapshots
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the remover cannot remove stays and is reported with its path, and the rest goes: a
/// mount point (not crossed, as `rm --one-file-system`), a file it may not remove.
struct TreeRemoverLeftoverTests {
    static let canMount = geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount")

    /// Runs `program` and says whether it exited 0.
    static func succeeds(_ program: String, _ arguments: [String]) -> Bool {
        (try? ChildProcess.run(program, arguments).status) == 0
    }

    /// A tmpfs mounted inside the tree (in this process's mount namespace, unmounted at the end).
    @Test(.enabled(if: TreeRemoverLeftoverTests.canMount, "needs root to mount a tmpfs"))
    func aMountPointIsNotCrossed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("one\n", to: "tree/a/one")
        let mount = directory.file("tree/a/mnt")
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        guard Self.succeeds("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "fetchd-test", mount]) else {
            return  // no mounting here (a container without the capability): nothing to test
        }
        defer { _ = Self.succeeds("/usr/bin/umount", ["-l", mount]) }
        try "kept\n".write(toFile: mount + "/inside", atomically: false, encoding: .utf8)
        let failure = try #require(throws: TreeRemover.Failure.self) { try TreeRemover().remove(directory.file("tree")) }
        #expect(failure.count == 1 && failure.problems.first?.path == mount, "\(failure)")
        #expect(failure.description.contains("another file system"), "\(failure)")
        #expect(try String(contentsOfFile: mount + "/inside", encoding: .utf8) == "kept\n")
        #expect(!FileManager.default.fileExists(atPath: directory.file("tree/a/one")))
    }

    /// A file that cannot be removed (immutable as root, in a read-only folder otherwise) is
    /// named in the failure; everything else in the tree is removed, and the folders holding it
    /// stay without more to say.
    @Test func aFileThatCannotBeRemovedIsReportedWithItsPath() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("one\n", to: "tree/a/one")
        let locked = try directory.write("locked\n", to: "tree/b/locked")
        try directory.write("other\n", to: "tree/b/other")
        let folder = directory.file("tree/b")
        let expectedCode: Int32
        if geteuid() == 0 {
            guard Self.succeeds("/usr/bin/chattr", ["+i", locked]) else { return }  // no immutable files here
            expectedCode = EPERM
        } else {
            #expect(chmod(folder, 0o555) == 0)
            expectedCode = EACCES
        }
        defer {
            if geteuid() == 0 { _ = Self.succeeds("/usr/bin/chattr", ["-i", locked]) } else { chmod(folder, 0o755) }
        }
        let failure = try #require(throws: TreeRemover.Failure.self) { try TreeRemover().remove(directory.file("tree")) }
        // Not root: `other` in the read-only folder is left too, listed in either order.
        #expect(failure.problems.contains { $0.path == locked && $0.code == expectedCode }, "\(failure)")
        #expect(failure.description.contains("cannot remove all of \(directory.file("tree"))"), "\(failure)")
        #expect(failure.description.contains("unlinkat") && failure.description.contains("by hand"), "\(failure)")
        #expect(FileManager.default.fileExists(atPath: locked))
        #expect(!FileManager.default.fileExists(atPath: directory.file("tree/a")))
        if geteuid() == 0 { #expect(!FileManager.default.fileExists(atPath: directory.file("tree/b/other"))) }
    }

    /// The store tells its report of a tree it could not remove, instead of leaving it in silence.
    @Test func theStoreReportsATreeItCouldNotRemove() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = directory.file("cache")
        try FileManager.default.createDirectory(atPath: cache + "/news", withIntermediateDirectories: true)
        try directory.write("precious\n", to: "outside/victim")
        #expect(symlink(directory.file("outside"), cache + "/news/.staging-user") == 0)
        let reported = Recorded<[String]>([])
        _ = try SnapshotStore(root: cache, reportRemovalFailure: { failure in reported.update { $0.append("\(failure)") } })
        let lines = reported.value
        #expect(lines.count == 1 && lines.first?.contains("news/.staging-user") == true, "\(lines)")
        #expect(try String(contentsOfFile: directory.file("outside/victim"), encoding: .utf8) == "precious\n")
    }
}
