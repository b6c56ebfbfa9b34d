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
    /// Where fetches in progress write, before a commit publishes it.
    public let staging: StagingArea

    /// Opens (and creates) the cache at `root`, clearing debris left by an interrupted write.
    /// Throws `CacheLock.Busy` if another process has the cache open, else `DurableFile.Failure`.
    /// Every tree is removed by `remover`; `reportRemovalFailure` hears of each one not removed
    /// whole (by default, on standard error).
    public init(root: String, maxTotalBytes: Int = Defaults.cacheMaxBytes, remover: TreeRemover = TreeRemover(),
                reportRemovalFailure: @escaping @Sendable (TreeRemover.Failure) -> Void
                    = { SnapshotStore.printRemovalFailure($0) }) throws {
        self.root = root
        layout = SnapshotLayout(root: root)
        staging = StagingArea(layout: layout, remover: remover, reportRemovalFailure: reportRemovalFailure)
        self.maxTotalBytes = maxTotalBytes
        try DurableFile.makeDirectory(root)
        lock = try CacheLock(directory: root)
        ledger = Mutex(VersionLedger())
        // Whatever is staged belongs to fetches of an earlier process: none will ever finish.
        removeTree(staging.directory)
        try DurableFile.makeDirectory(staging.directory, mode: 0o700)
        try DurableFile.makeDirectory(layout.registeredDirectory, mode: 0o700)
        for handler in handlerNames() { recover(handler: handler) }
        ledger.withLock { $0 = scanLedger() }
    }

    /// The folder of `handler`'s snapshots.
    public func directory(of handler: String) -> String { layout.directory(of: handler) }

    /// The stable path of the newest snapshot's content.
    public func latestContentPath(of handler: String) -> String { layout.latestContentPath(of: handler) }

    /// `latestContentPath(of:)` once `handler` has published content; nil until then.
    public func publishedContentPath(of handler: String) -> String? {
        let path = latestContentPath(of: handler)
        return access(path, F_OK) == 0 ? path : nil
    }

    /// The newest snapshot's metadata, or nil when the handler has none; read from its
    /// `meta.json` each time.
    public func latest(of handler: String) -> SnapshotMetadata? {
        currentVersion(of: handler).flatMap { metadata(of: handler, version: $0) }
    }

    /// The metadata in `handler`'s version `version`, or nil.
    public func metadata(of handler: String, version: String) -> SnapshotMetadata? {
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

    /// Handler folders present in the cache: configured handlers' by name, registered ones' as
    /// `NAME@UID`.
    public func handlerNames() -> [String] {
        let files = FileManager.default
        let configured = ((try? files.contentsOfDirectory(atPath: root)) ?? []).filter(HandlerName.isValid)
        var registered: [String] = []
        for uid in (try? files.contentsOfDirectory(atPath: layout.registeredDirectory)) ?? [] {
            for base in (try? files.contentsOfDirectory(atPath: "\(layout.registeredDirectory)/\(uid)")) ?? [] {
                if let name = RegisteredName(qualified: "\(base)@\(uid)") { registered.append(name.qualified) }
            }
        }
        return (configured + registered).sorted()
    }

    /// Clears what an interrupted commit can leave behind and re-points `latest` at the newest
    /// complete version (a crash between the version rename and the link swap leaves it one behind).
    public func recover(handler: String) {
        let handlerDirectory = directory(of: handler)
        removeTree("\(handlerDirectory)/.staging")  // where older versions of fetchd staged fetches
        // The handler's user owns this one and may change it during the walk (issue 42): the
        // removal never follows a link, whatever is swapped in.
        removeTree(staging.userDirectory(of: handler))
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

    /// Removes the tree at `path` (see `TreeRemover`), reporting what is left.
    func removeTree(_ path: String) { staging.removeTree(path) }

    /// The default report of a tree not removed whole: a line on standard error (a tool's user
    /// sees it; under systemd it reaches the journal).
    public static func printRemovalFailure(_ failure: TreeRemover.Failure) {
        FileHandle.standardError.write(Data("fetchd: \(failure)\n".utf8))
    }
}
