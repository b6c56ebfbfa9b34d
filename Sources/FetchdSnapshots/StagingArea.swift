#if canImport(Glibc)
import Glibc
#endif
import FetchdCore
import Foundation

/// Where work in progress lives in the cache before a commit publishes it, or where it waits
/// to resume: `<cache>/.staging` (fetches of this process, cleared at each start),
/// `<handler>/.staging-user` (a program running as another user) and `<handler>/.transfer` (a
/// background transfer's partial download, kept across restarts).
public struct StagingArea: Sendable {
    /// The cache's layout.
    let layout: SnapshotLayout
    /// How trees are removed: the store's, for its folders as for staging ones.
    let remover: TreeRemover
    /// Told of every tree that could not be removed whole (the daemon logs it): what is left is
    /// for the operator to see, never skipped over in silence.
    let reportRemovalFailure: @Sendable (TreeRemover.Failure) -> Void

    /// Where fetches in progress stage their version folders (`<cache>/.staging`, 0700).
    public var directory: String { "\(layout.root)/.staging" }

    /// Where a program running as another user writes (`<handler>/.staging-user`).
    func userDirectory(of handler: String) -> String { "\(layout.directory(of: handler))/.staging-user" }

    /// A fresh path where a program writes its next snapshot (`FETCHD_OUTPUT`):
    /// `<cache>/.staging/<handler>.<unique>`, on the cache's file system so that committing it
    /// is a rename. Nothing is created.
    public func path(for handler: String) -> String {
        "\(directory)/\(handler).\(DurableFile.uniqueSuffix())"
    }

    /// A fresh path for content fetchd writes itself (an http body):
    /// `<cache>/.staging/<handler>.<unique>/content`, in a new folder that becomes the version
    /// folder if the fetch brings new data. This saves each fetch a `mkdir` and a `rename`
    /// over `path(for:)`; it is not for programs, whose other files in the folder would
    /// be published with it. `discard(stagedFile:)` removes the file and its folder.
    public func versionPath(for handler: String) throws(DurableFile.Failure) -> String {
        let folder = path(for: handler)
        if mkdir(folder, 0o755) != 0 {
            // `.staging` is made at start; made again (0700) if it has gone since.
            guard errno == ENOENT else { throw DurableFile.Failure(operation: "mkdir", path: folder, code: errno) }
            try DurableFile.makeDirectory(directory, mode: 0o700)
            try DurableFile.makeDirectory(folder)
        }
        return "\(folder)/\(SnapshotLayout.contentName)"
    }

    /// The staging folder `stagedFile` was given in by `versionPath(for:)`, or nil when
    /// it is a file from elsewhere (a program's output, a background transfer's download).
    func folder(of stagedFile: String) -> String? {
        let folder = PathName.directory(of: stagedFile)
        guard PathName.lastComponent(of: stagedFile) == SnapshotLayout.contentName,
              PathName.directory(of: folder) == directory else { return nil }
        return folder
    }

    /// For a handler whose program runs as another user (`user = "NAME"`): a fresh path where
    /// that program writes (`FETCHD_OUTPUT`), in `<handler>/.staging-user/`, a folder only that
    /// user (and root) may enter. `.staging` stays fetchd's alone: after the program, the file is
    /// checked and copied into a `path(for:)` (`UserOutput` in FetchdHandlers), so the user has
    /// no path to what is published. Handing the folder over takes the right to chown: fetchd
    /// running as root.
    public func userPath(for handler: String, user: UserAccount) throws(DurableFile.Failure) -> String {
        let folder = userDirectory(of: handler)
        try DurableFile.makeDirectory(folder, mode: 0o700)
        // Every time: the handler's user may have changed since the folder was made.
        guard lchown(folder, user.uid, user.gid) == 0 else {
            throw DurableFile.Failure(operation: "hand over to user \(user.name) (uid \(user.uid)) with chown",
                                      path: folder, code: errno)
        }
        return "\(folder)/\(UUID().uuidString.lowercased())"
    }

    /// The folder of `handler`'s partial background transfer (it may not exist). Unlike
    /// `.staging` it survives a restart: its content is the transfer's progress.
    public func transferDirectory(of handler: String) -> String { "\(layout.directory(of: handler))/.transfer" }

    /// `transferDirectory(of:)`, created when missing.
    @discardableResult
    public func makeTransferDirectory(for handler: String) throws(DurableFile.Failure) -> String {
        let directory = transferDirectory(of: handler)
        try DurableFile.makeDirectory(directory, mode: 0o700)
        return directory
    }

    /// Removes a staged file that will not be committed (failed or expired fetch), and the
    /// staging folder `versionPath(for:)` made for it (with anything else found in it,
    /// such as a half-written meta.json; nothing else should be there).
    public func discard(stagedFile: String) {
        unlink(stagedFile)
        if let folder = folder(of: stagedFile), rmdir(folder) != 0, errno == ENOTEMPTY { removeTree(folder) }
    }

    /// Removes the tree at `path` with `remover`, reporting what is left.
    func removeTree(_ path: String) { remover.remove(path, reporting: reportRemovalFailure) }
}
