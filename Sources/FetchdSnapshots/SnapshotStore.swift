#if canImport(Glibc)
import Glibc
#endif
import FetchdCore
import Foundation
import Synchronization

/// The cache directory: one folder per handler holding versioned snapshots.
///
/// ```
/// <cache>/<handler>/latest -> versions/00000042-20261121T083012Z
/// <cache>/<handler>/versions/00000042-20261121T083012Z/content
/// <cache>/<handler>/versions/00000042-20261121T083012Z/meta.json
/// <cache>/.staging/<handler>.<unique>/content  (an http fetch in progress: its future
///                                               version folder, never read by others)
/// <cache>/.staging/<handler>.<unique>          (what a program writes, FETCHD_OUTPUT)
/// <cache>/<handler>/.staging-user/       (where a program running as another user writes)
/// <cache>/<handler>/.transfer/           (a background transfer's partial download; kept
///                                         across restarts, so it resumes)
/// ```
///
/// An http fetch writes its content into a folder of its own under `.staging`; once the
/// content is complete, meta.json is written beside it, and after a `syncfs` the folder is
/// renamed into `versions/` and `latest` swapped with a rename. What a program wrote (or a
/// transfer downloaded) is first moved into such a folder: a program might leave other files
/// beside its output, which must not be published. A reader who opens `latest/content`
/// therefore always sees a whole snapshot, even if fetchd is killed at any instant. Staging the
/// version folder itself (not a file that is later moved into one) saves a fetch a `mkdir`
/// and a `rename`, and one cache-wide `.staging` made at start saves each fetch another
/// `mkdir`. Callers must not commit two snapshots of the same handler at once (the daemon runs
/// each handler at most once at a time).
///
/// Commits come in batches (`commit(_:)`): a wake that fetched a thousand handlers pays two
/// `syncfs` calls, not five fsyncs per snapshot (see `SnapshotStore+Commit.swift`).
public final class SnapshotStore: Sendable {
    /// The outcome of committing a staged file.
    public enum CommitOutcome: Sendable, Equatable {
        /// A new version was written and is now `latest`.
        case written(SnapshotMetadata)
        /// The content is byte-identical to `latest`; nothing was written.
        case unchanged(LatestVersion)
    }

    /// The cache directory.
    public let root: String
    /// Where its published snapshots are, by name.
    public let layout: SnapshotLayout
    /// The total size above which the oldest non-latest versions are evicted.
    public let maxTotalBytes: Int
    /// The size of every version on disk, kept in step with commits and deletions so that the
    /// cache cap costs nothing per commit (a scan per commit made a wake quadratic).
    let ledger: Mutex<VersionLedger>
    /// What the fetch path needs of each handler's `latest`, as last read or written (`known`).
    let latestKnown = Mutex<[String: LatestVersion]>([:])
    /// This process's hold on the cache: no other fetchd clears `.staging` under its fetches.
    private let lock: CacheLock
    /// Where fetches in progress stage their version folders (`<cache>/.staging`, 0700).
    public var stagingDirectory: String { "\(root)/.staging" }

    /// Opens (and creates) the cache at `root`, clearing debris left by an interrupted write.
    /// Throws `CacheLock.Busy` if another process has the cache open, else `DurableFile.Failure`.
    public init(root: String, maxTotalBytes: Int = Defaults.cacheMaxBytes) throws {
        self.root = root
        layout = SnapshotLayout(root: root)
        self.maxTotalBytes = maxTotalBytes
        try DurableFile.makeDirectory(root)
        lock = try CacheLock(directory: root)
        ledger = Mutex(VersionLedger())
        // Whatever is staged belongs to fetches of an earlier process: none will ever finish.
        removeTree(stagingDirectory)
        try DurableFile.makeDirectory(stagingDirectory, mode: 0o700)
        for handler in handlerNames() { recover(handler: handler) }
        ledger.withLock { $0 = scanLedger() }
    }

    /// The folder of `handler`'s snapshots.
    public func directory(of handler: String) -> String { layout.directory(of: handler) }

    /// The stable path of the newest snapshot's content.
    public func latestContentPath(of handler: String) -> String { layout.latestContentPath(of: handler) }

    /// A fresh path where a program writes its next snapshot (`FETCHD_OUTPUT`):
    /// `<cache>/.staging/<handler>.<unique>`, on the cache's file system so that committing it
    /// is a rename. Nothing is created.
    public func stagingPath(for handler: String) -> String {
        "\(stagingDirectory)/\(handler).\(DurableFile.uniqueSuffix())"
    }

    /// A fresh path for content fetchd writes itself (an http body):
    /// `<cache>/.staging/<handler>.<unique>/content`, in a new folder that becomes the version
    /// folder if the fetch brings new data. This saves each fetch a `mkdir` and a `rename`
    /// over `stagingPath(for:)`; it is not for programs, whose other files in the folder would
    /// be published with it. `discard(stagedFile:)` removes the file and its folder.
    public func versionStagingPath(for handler: String) throws(DurableFile.Failure) -> String {
        let folder = stagingPath(for: handler)
        if mkdir(folder, 0o755) != 0 {
            // `.staging` is made at start; made again (0700) if it has gone since.
            guard errno == ENOENT else { throw DurableFile.Failure(operation: "mkdir", path: folder, code: errno) }
            try DurableFile.makeDirectory(stagingDirectory, mode: 0o700)
            try DurableFile.makeDirectory(folder)
        }
        return "\(folder)/\(SnapshotLayout.contentName)"
    }

    /// The staging folder `stagedFile` was given in by `versionStagingPath(for:)`, or nil when
    /// it is a file from elsewhere (a program's output, a background transfer's download).
    func stagingFolder(of stagedFile: String) -> String? {
        let folder = PathName.directory(of: stagedFile)
        guard PathName.lastComponent(of: stagedFile) == SnapshotLayout.contentName,
              PathName.directory(of: folder) == stagingDirectory else { return nil }
        return folder
    }

    /// For a handler whose program runs as another user (`user = "NAME"`): a fresh path where
    /// that program writes (`FETCHD_OUTPUT`), in `<handler>/.staging-user/`, a folder only that
    /// user (and root) may enter. `.staging` stays fetchd's alone: after the program, the file is
    /// checked and copied into a `stagingPath` (`UserOutput` in FetchdHandlers), so the user has
    /// no path to what is published. Handing the folder over takes the right to chown: fetchd
    /// running as root.
    public func userStagingPath(for handler: String, user: UserAccount) throws(DurableFile.Failure) -> String {
        let folder = "\(directory(of: handler))/.staging-user"
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
    public func transferDirectory(of handler: String) -> String { "\(directory(of: handler))/.transfer" }

    /// `transferDirectory(of:)`, created when missing.
    @discardableResult
    public func makeTransferDirectory(for handler: String) throws(DurableFile.Failure) -> String {
        let directory = transferDirectory(of: handler)
        try DurableFile.makeDirectory(directory, mode: 0o700)
        return directory
    }

    /// Removes a staged file that will not be committed (failed or expired fetch), and the
    /// staging folder `versionStagingPath(for:)` made for it (with anything else found in it,
    /// such as a half-written meta.json; nothing else should be there).
    public func discard(stagedFile: String) {
        unlink(stagedFile)
        if let folder = stagingFolder(of: stagedFile), rmdir(folder) != 0, errno == ENOTEMPTY { removeTree(folder) }
    }

    /// The newest snapshot's metadata, or nil when the handler has none; read from its
    /// `meta.json` each time.
    public func latest(of handler: String) -> SnapshotMetadata? {
        currentVersion(of: handler).flatMap { metadata(of: handler, version: $0) }
    }

    /// The metadata in `handler`'s version `version`, or nil.
    func metadata(of handler: String, version: String) -> SnapshotMetadata? {
        guard let data = FileManager.default.contents(atPath: "\(layout.versionDirectory(of: handler, version: version))/\(SnapshotLayout.metadataName)")
        else { return nil }
        return try? SnapshotMetadata.decode(data)
    }

    /// What the fetch path needs of `handler`'s version `current`, which the caller has just
    /// read from `latest` (`currentVersion(of:)`): one readlink per fetch, not one per question.
    ///
    /// Decoded once per version and remembered: every fetch asks (for its validators and to spot
    /// unchanged content). `latest` is read each time, so a cache changed behind fetchd's back
    /// is still seen.
    public func known(of handler: String, version current: String) -> LatestVersion? {
        if let known = latestKnown.withLock({ $0[handler] }), known.version == current { return known }
        guard let metadata = metadata(of: handler, version: current) else { return nil }
        let known = LatestVersion(metadata)
        latestKnown.withLock { $0[handler] = known }
        return known
    }

    /// Version directory names of `handler`, oldest first.
    public func versionNames(of handler: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: layout.versionsDirectory(of: handler))) ?? []
        return names.filter { !$0.hasPrefix(".") && VersionName.sequence(of: $0) != nil }.sorted()
    }

    /// The version `latest` points at.
    public func currentVersion(of handler: String) -> String? {
        // readlink(2) itself: Foundation's wrapper costs more than the call, once per fetch.
        // On the stack: a zeroed 4 KiB array per call was most of this function's cost.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(PATH_MAX)) { buffer in
            let length = readlink(layout.latestLink(of: handler), buffer.baseAddress!, buffer.count)
            guard length > 0 else { return nil }
            return PathName.lastComponent(of: String(decoding: buffer[..<length], as: UTF8.self))
        }
    }

    /// Handler folders present in the cache.
    public func handlerNames() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter(HandlerName.isValid).sorted()
    }

    /// Clears what an interrupted commit can leave behind and re-points `latest` at the newest
    /// complete version (a crash between the version rename and the link swap leaves it one behind).
    public func recover(handler: String) {
        let handlerDirectory = directory(of: handler)
        removeTree("\(handlerDirectory)/.staging")  // where older versions of fetchd staged fetches
        removeTree("\(handlerDirectory)/.staging-user")
        let versionsDirectory = layout.versionsDirectory(of: handler)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: versionsDirectory)) ?? [] where name.hasPrefix(".") {
            removeTree("\(versionsDirectory)/\(name)")
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: handlerDirectory)) ?? [] where name.hasPrefix("latest.tmp") {
            unlink("\(handlerDirectory)/\(name)")
        }
        if let newest = versionNames(of: handler).last, currentVersion(of: handler) != newest {
            try? DurableFile.replaceSymlink(at: layout.latestLink(of: handler), target: SnapshotLayout.latestTarget(version: newest))
        }
    }

    func removeTree(_ path: String) { try? FileManager.default.removeItem(atPath: path) }
}
