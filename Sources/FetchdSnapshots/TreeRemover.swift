#if canImport(Glibc)
import Glibc
#endif
import FetchdCore

/// Removes a folder and everything in it through descriptors: every folder is opened relative to
/// its parent's descriptor with `O_NOFOLLOW`, every entry removed with `unlinkat` relative to its
/// folder's descriptor. The one way fetchd removes a tree.
///
/// Why not `FileManager.removeItem`: it walks with fts and `FTS_NOCHDIR`, so every unlink is a
/// whole path resolved again. fetchd runs as root for `user =` handlers, and such a handler's user
/// owns `<handler>/.staging-user`: swapping a folder inside for a symbolic link after it was listed
/// sent root's unlinks wherever the link pointed (issue 42). Here a symbolic link is only ever
/// unlinked itself, a folder on another file system (a mount point) is not entered, and the walk
/// is at most `maxDepth` folders deep (each level holds a descriptor open). A folder its user
/// moves elsewhere mid-walk loses its entries, which that user could remove anyway: moving a
/// folder takes write permission on it.
public struct TreeRemover: Sendable {
    /// One thing the walk could not get past; the rest was removed.
    public struct Problem: Sendable, CustomStringConvertible {
        /// What is left in place.
        public let path: String
        /// What failed (a system call) or why it was left (a mount point, too deep).
        public let what: String
        /// The errno value; 0 when no call failed.
        public let code: Int32
        /// `/var/cache/fetchd/x/.staging-user/a/f: unlinkat: Operation not permitted`.
        public var description: String {
            code == 0 ? "\(path): \(what)" : "\(path): \(what): \(String(cString: strerror(code)))"
        }
    }

    /// A tree not removed whole: what is left, and why.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The tree asked for.
        public let root: String
        /// The first problems met (at most `keptProblems`).
        public let problems: [Problem]
        /// How many problems there were in all.
        public let count: Int
        /// `cannot remove all of ROOT: FIRST PROBLEM (and 2 more); remove what is left by hand`.
        public var description: String {
            let more = count > 1 ? " (and \(count - 1) more)" : ""
            return "cannot remove all of \(root): \(problems.first?.description ?? "?")\(more); remove what is left by hand"
        }
    }

    /// Problems a `Failure` keeps: a tree of a million immutable files must not make a log line
    /// of a million paths.
    public static let keptProblems = 8
    /// The default depth bound: far deeper than anything fetchd makes (three levels) or a
    /// program needs in its staging folder, and 256 descriptors at most.
    public static let defaultMaxDepth = 256

    /// Folders deeper than this below the root are left in place and reported.
    public let maxDepth: Int
    /// Called with each folder's path after it is opened and before its entries are read: the
    /// tests' seam to change the tree in the middle of the walk.
    let willRead: (@Sendable (String) -> Void)?

    /// A remover that descends at most `maxDepth` folders below the root.
    public init(maxDepth: Int = TreeRemover.defaultMaxDepth) {
        self.init(maxDepth: maxDepth, willRead: nil)
    }

    /// A remover that calls `willRead` before it reads each folder (tests).
    init(maxDepth: Int = TreeRemover.defaultMaxDepth, willRead: (@Sendable (String) -> Void)?) {
        self.maxDepth = maxDepth
        self.willRead = willRead
    }

    /// Removes the folder at `path` and everything in it; nothing when there is nothing there.
    /// A file there is unlinked; a symbolic link there is refused and left (fetchd never makes one
    /// at a name it removes as a tree, so someone else did, and its target is not fetchd's to
    /// empty). The folder part of `path` is trusted (resolved as given): it is fetchd's own.
    public func remove(_ path: String) throws(Failure) {
        var walk = Walk(remover: self)
        walk.removeRoot(path)
        if !walk.problems.isEmpty { throw Failure(root: path, problems: walk.problems, count: walk.count) }
    }

    /// `remove(_:)`, telling `report` what could not be removed instead of throwing: for callers
    /// that go on either way (a leftover is for the operator to see, not to stop a commit).
    public func remove(_ path: String, reporting report: (Failure) -> Void) {
        do throws(Failure) { try remove(path) } catch { report(error) }
    }
}

/// One removal's state: the problems met so far and the root's file system.
private struct Walk {
    let remover: TreeRemover
    var problems: [TreeRemover.Problem] = []
    var count = 0
    var device: dev_t = 0

    init(remover: TreeRemover) { self.remover = remover }

    /// Records a problem; only the first few are kept.
    mutating func note(_ path: String, _ what: String, _ code: Int32 = 0) {
        count += 1
        if problems.count < TreeRemover.keptProblems { problems.append(.init(path: path, what: what, code: code)) }
    }

    /// Opens the root without following a link, then empties and removes it.
    mutating func removeRoot(_ path: String) {
        let name = PathName.lastComponent(of: path)
        guard !name.isEmpty, name != ".", name != "..", name != "/" else {
            return note(path, "not a folder's name: give the path of the folder to remove")
        }
        let parentPath = PathName.directory(of: path)
        let parent = open(parentPath.isEmpty ? "." : parentPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parent >= 0 else {
            if errno != ENOENT { note(parentPath, "open", errno) }
            return
        }
        defer { close(parent) }
        let folder = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else {
            let code = errno
            guard code == ENOTDIR || code == ELOOP else {
                if code != ENOENT { note(path, "open", code) }
                return
            }
            var info = stat()
            if fstatat(parent, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFLNK {
                return note(path, "is a symbolic link, not a folder: not followed, left in place (remove the link by hand)")
            }
            return unlinkFile(parent, name, path, descending: false)
        }
        var info = stat()
        guard fstat(folder, &info) == 0 else {
            close(folder)
            return note(path, "fstat", errno)
        }
        device = info.st_dev
        removeOpened(folder, in: parent, name, path, depth: 0)
    }

    /// Removes the entry `name` of `parent`, which was a folder when listed.
    mutating func removeFolder(in parent: Int32, _ name: UnsafePointer<CChar>, _ path: String, depth: Int) {
        let folder = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else {
            let code = errno
            // No longer a folder (swapped for a symbolic link or a file since it was listed):
            // its name is removed, nothing is followed.
            if code == ENOTDIR || code == ELOOP { return unlinkFile(parent, name, path, descending: false) }
            if code != ENOENT { note(path, "open", code) }
            return
        }
        var info = stat()
        guard fstat(folder, &info) == 0 else {
            close(folder)
            return note(path, "fstat", errno)
        }
        guard info.st_dev == device else {
            close(folder)
            return note(path, "on another file system (a mount point?): not entered, left in place (unmount it first)")
        }
        guard depth <= remover.maxDepth else {
            close(folder)
            return note(path, "more than \(remover.maxDepth) folders deep: not entered, left in place")
        }
        removeOpened(folder, in: parent, name, path, depth: depth)
    }

    /// Empties the open folder `folder` (closing it) and removes its name from `parent`.
    mutating func removeOpened(_ folder: Int32, in parent: Int32, _ name: UnsafePointer<CChar>, _ path: String, depth: Int) {
        guard let dir = fdopendir(folder) else {
            let code = errno
            close(folder)
            return note(path, "fdopendir", code)
        }
        defer { closedir(dir) }
        // A few passes: a process of the tree's user may still be adding entries.
        for _ in 0..<3 {
            let before = count
            rewinddir(dir)
            remover.willRead?(path)
            for (entry, isFolder) in Self.entries(of: dir) {
                let entryName = String(decoding: entry.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let entryPath = "\(path)/\(entryName)"
                entry.withUnsafeBufferPointer { bytes in
                    let raw = bytes.baseAddress!
                    if isFolder { removeFolder(in: dirfd(dir), raw, entryPath, depth: depth + 1) }
                    else { unlinkFile(dirfd(dir), raw, entryPath, depth: depth + 1) }
                }
            }
            // Something below is left and already said why: this folder stays, nothing more to say.
            guard count == before else { return }
            if unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT { return }
            let code = errno
            if code == ENOTEMPTY || code == EEXIST { continue }
            // Swapped for something else after it was emptied: that name goes, unfollowed.
            if code == ENOTDIR { return unlinkFile(parent, name, path, descending: false) }
            return note(path, "unlinkat", code)
        }
        note(path, "still not empty after three passes (something keeps writing there; stop it first)")
    }

    /// Removes the entry `name` of `parent` that was not a folder when listed; one that has become
    /// a folder since is removed as one when `descending` (once: an entry that keeps changing
    /// between a folder and a link must not keep the walk going round).
    mutating func unlinkFile(_ parent: Int32, _ name: UnsafePointer<CChar>, _ path: String, depth: Int = 0,
                             descending: Bool = true) {
        if unlinkat(parent, name, 0) == 0 || errno == ENOENT { return }
        let code = errno
        if code == EISDIR {
            if descending { return removeFolder(in: parent, name, path, depth: depth) }
            return note(path, "keeps changing between a folder and something else: left in place")
        }
        note(path, "unlinkat", code)
    }

    /// The names in `dir` but `.` and `..` (as the kernel gave them, NUL-terminated: a name that
    /// is not UTF-8 must still be removable), and whether each was a folder or of unknown type,
    /// tried as a folder (opening it with O_NOFOLLOW | O_DIRECTORY settles it).
    static func entries(of dir: OpaquePointer) -> [([CChar], Bool)] {
        var entries: [([CChar], Bool)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                bytes.prefix(while: { $0 != 0 }).map { CChar(bitPattern: $0) } + [0]
            }
            if name == [46, 0] || name == [46, 46, 0] { continue }  // "." and ".."
            let type = entry.pointee.d_type
            entries.append((name, type == UInt8(DT_DIR) || type == UInt8(DT_UNKNOWN)))
        }
        return entries
    }
}
