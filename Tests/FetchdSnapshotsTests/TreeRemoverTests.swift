@testable import FetchdSnapshots
import FetchdTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Trees are removed through descriptors (issue 42): a folder a user swaps for a symbolic link in
/// the middle of the walk is not followed, nor is a link at the root; a mount point is not
/// crossed; what cannot be removed is reported with its path.
struct TreeRemoverTests {
    /// `tree/a/one`, `tree/b/two` and, outside the tree, `outside/victim`.
    struct RaceTree {
        let directory: TemporaryDirectory
        var tree: String { directory.file("tree") }
        var victim: String { directory.file("outside/victim") }

        init() throws {
            directory = try TemporaryDirectory()
            try directory.write("one\n", to: "tree/a/one")
            try directory.write("two\n", to: "tree/b/two")
            try directory.write("precious\n", to: "outside/victim")
        }

        /// What the tree's user does in the middle of the walk: once the walk has entered `a` or
        /// `b`, the other one (listed as a folder, not yet entered) is moved aside and a
        /// symbolic link to `outside` takes its name. Called with each folder the walk enters.
        func swap(_ swapped: Recorded<Bool>, in tree: String? = nil) -> @Sendable (String) -> Void {
            let (tree, outside, aside) = (tree ?? self.tree, directory.file("outside"), directory.file("aside"))
            return { entered in
                let name = (entered as NSString).lastPathComponent
                guard name == "a" || name == "b", !swapped.value else { return }
                let other = tree + "/" + (name == "a" ? "b" : "a")
                guard rename(other, aside) == 0, symlink(outside, other) == 0 else { return }
                swapped.update { $0 = true }
            }
        }
    }

    /// Lets a test place the swap in FileManager's own walk, the removal fetchd used before:
    /// it asks its delegate about each folder before it lists it. (On Linux the protocol has
    /// no default implementations: all sixteen are here, the path forms as the URL ones.)
    final class SwapDelegate: FileManagerDelegate {
        let entered: @Sendable (String) -> Void
        init(_ entered: @escaping @Sendable (String) -> Void) { self.entered = entered }
        func fileManager(_ fileManager: FileManager, shouldRemoveItemAt url: URL) -> Bool {
            entered(url.path)
            return true
        }
        func fileManager(_ fileManager: FileManager, shouldProceedAfterError error: any Error, removingItemAt url: URL) -> Bool {
            false  // as FileManager.default: stop at the first error
        }
        func fileManager(_ fileManager: FileManager, shouldCopyItemAt srcURL: URL, to dstURL: URL) -> Bool { true }
        func fileManager(_ fileManager: FileManager, shouldProceedAfterError error: any Error, copyingItemAt srcURL: URL,
                         to dstURL: URL) -> Bool { false }
        func fileManager(_ fileManager: FileManager, shouldMoveItemAt srcURL: URL, to dstURL: URL) -> Bool { true }
        func fileManager(_ fileManager: FileManager, shouldProceedAfterError error: any Error, movingItemAt srcURL: URL,
                         to dstURL: URL) -> Bool { false }
        func fileManager(_ fileManager: FileManager, shouldLinkItemAt srcURL: URL, to dstURL: URL) -> Bool { true }
        func fileManager(_ fileManager: FileManager, shouldProceedAfterError error: any Error, linkingItemAt srcURL: URL,
                         to dstURL: URL) -> Bool { false }
        func fileManager(_ fileManager: FileManager, shouldRemoveItemAtPath path: String) -> Bool {
            entered(path)
            return true
        }
        func fileManager(_ fileManager: FileManager, shouldProceedAfterError error: any Error, removingItemAtPath path: String) -> Bool {
            false
        }
        func fileManager(_ fileManager: FileManager, shouldCopyItemAtPath srcPath: String, toPath dstPath: String) -> Bool { true }
        func fileManager(_ fileManager: FileManager, shouldProceedAfterError error: any Error, copyingItemAtPath srcPath: String,
                         toPath dstPath: String) -> Bool { false }
        func fileManager(_ fileManager: FileManager, shouldMoveItemAtPath srcPath: String, toPath dstPath: String) -> Bool { true }
        func fileManager(_ fileManager: FileManager, shouldProceedAfterError error: any Error, movingItemAtPath srcPath: String,
                         toPath dstPath: String) -> Bool { false }
        func fileManager(_ fileManager: FileManager, shouldLinkItemAtPath srcPath: String, toPath dstPath: String) -> Bool { true }
        func fileManager(_ fileManager: FileManager, shouldProceedAfterError error: any Error, linkingItemAtPath srcPath: String,
                         toPath dstPath: String) -> Bool { false }
    }

    @Test func aFolderSwappedForALinkMidWalkIsNotFollowed() throws {
        let race = try RaceTree()
        let swapped = Recorded(false)
        try TreeRemover(willRead: race.swap(swapped)).remove(race.tree)
        #expect(swapped.value, "the swap was not placed: the test proves nothing")
        #expect(try String(contentsOfFile: race.victim, encoding: .utf8) == "precious\n", "the walk followed the link")
        #expect(!FileManager.default.fileExists(atPath: race.tree))
        #expect(access(race.tree, F_OK) != 0 && errno == ENOENT)
    }

    /// The control: the same swap, placed at the same point of FileManager.removeItem's walk,
    /// sends its unlinks through the link. If this stops failing to protect the victim, the
    /// race test above no longer shows anything about path-based removal.
    @Test func pathBasedRemovalFollowsTheSameSwap() throws {
        let race = try RaceTree()
        let swapped = Recorded(false)
        let files = FileManager()
        let delegate = SwapDelegate(race.swap(swapped))
        files.delegate = delegate
        try? files.removeItem(atPath: race.tree)
        withExtendedLifetime(delegate) {}
        #expect(swapped.value, "the swap was not placed")
        #expect(!FileManager.default.fileExists(atPath: race.victim), "FileManager.removeItem did not follow the swapped link")
    }

    /// The same race where it matters: at start, as root, on a `user =` handler's `.staging-user`.
    @Test func theStartRemovesAUsersStagingFolderWithoutFollowingASwap() throws {
        let race = try RaceTree()
        let cache = race.directory.file("cache")
        let staging = cache + "/news/.staging-user"
        try FileManager.default.createDirectory(atPath: cache + "/news", withIntermediateDirectories: true)
        #expect(rename(race.tree, staging) == 0)
        let swapped = Recorded(false)
        let reported = Recorded<[String]>([])
        _ = try SnapshotStore(root: cache, remover: TreeRemover(willRead: race.swap(swapped, in: staging)),
                              reportRemovalFailure: { failure in reported.update { $0.append("\(failure)") } })
        #expect(swapped.value)
        #expect(try String(contentsOfFile: race.victim, encoding: .utf8) == "precious\n")
        #expect(!FileManager.default.fileExists(atPath: staging))
        #expect(reported.value.isEmpty, "\(reported.value)")
    }

    @Test func aLinkAtTheRootIsRefusedAndNotFollowed() throws {
        let race = try RaceTree()
        let link = race.directory.file("link")
        #expect(symlink(race.directory.file("outside"), link) == 0)
        let failure = try #require(throws: TreeRemover.Failure.self) { try TreeRemover().remove(link) }
        #expect(failure.problems.first?.path == link && failure.count == 1)
        #expect(failure.description.contains("symbolic link") && failure.description.contains("by hand"), "\(failure)")
        #expect(try String(contentsOfFile: race.victim, encoding: .utf8) == "precious\n")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == race.directory.file("outside"))
    }

    /// A link inside the tree is removed itself, its target left alone; a file whose name is not
    /// UTF-8 goes too; nothing there is nothing to do.
    @Test func linksInsideAreUnlinkedAndOddNamesRemoved() throws {
        let race = try RaceTree()
        #expect(symlink(race.directory.file("outside"), race.tree + "/a/link") == 0)
        #expect(symlink(race.victim, race.tree + "/file-link") == 0)
        let odd: [CChar] = Array((race.tree + "/b/").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF), 0x41, 0]
        let fd = open(odd, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        #expect(fd >= 0)
        close(fd)
        try TreeRemover().remove(race.tree)
        #expect(!FileManager.default.fileExists(atPath: race.tree))
        #expect(try String(contentsOfFile: race.victim, encoding: .utf8) == "precious\n")
        try TreeRemover().remove(race.tree)  // gone already: no failure
    }

    /// Deeper than a path can name (PATH_MAX): a path-based walk cannot even reach the bottom.
    @Test func aDeepTreeIsRemoved() throws {
        let directory = try TemporaryDirectory()
        let depth = try Self.makeDeepTree(at: directory.file("deep"), levels: 200)
        #expect(depth > Int(PATH_MAX))
        try TreeRemover().remove(directory.file("deep"))
        #expect(!FileManager.default.fileExists(atPath: directory.file("deep")))
    }

    @Test func aTreeDeeperThanTheBoundIsLeftAndReported() throws {
        let directory = try TemporaryDirectory()
        _ = try Self.makeDeepTree(at: directory.file("deep"), levels: 6)
        let failure = try #require(throws: TreeRemover.Failure.self) { try TreeRemover(maxDepth: 3).remove(directory.file("deep")) }
        #expect(failure.count == 1 && failure.description.contains("more than 3 folders deep"), "\(failure)")
        #expect(failure.problems.first?.path.hasPrefix(directory.file("deep/")) == true)
    }

    /// The folder `levels` deep at `root`, made through descriptors (its path is too long to
    /// name); returns the length its path would have.
    static func makeDeepTree(at root: String, levels: Int) throws -> Int {
        let name = String(repeating: "d", count: 40)
        try #require(mkdir(root, 0o755) == 0)
        var fd = open(root, O_RDONLY | O_DIRECTORY)
        var length = root.utf8.count
        for _ in 0..<levels {
            try #require(mkdirat(fd, name, 0o755) == 0)
            let next = openat(fd, name, O_RDONLY | O_DIRECTORY)
            close(fd)
            fd = next
            length += name.utf8.count + 1
        }
        let file = openat(fd, "bottom", O_WRONLY | O_CREAT, 0o644)
        close(file)
        close(fd)
        return length
    }
}

/// A value the tests' hooks change from wherever they are called.
final class Recorded<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    /// The value now.
    var value: Value { storage.withLock { $0 } }
    /// Changes the value under the lock.
    func update(_ change: (inout Value) -> Void) { storage.withLock { change(&$0) } }
}
