#if canImport(Glibc)
import Glibc
#endif
import Crypto
import FetchdCore
import Foundation
import Synchronization

/// The cache directory: one folder per handler holding versioned snapshots.
///
/// ```
/// <cache>/<handler>/latest -> versions/00000042-20261121T083012Z
/// <cache>/<handler>/versions/00000042-20261121T083012Z/content
/// <cache>/<handler>/versions/00000042-20261121T083012Z/meta.json
/// <cache>/<handler>/.staging/            (work in progress, never read by others)
/// ```
///
/// A version directory is assembled under a hidden name and renamed into `versions/` only
/// when its content and metadata are complete and fsynced; `latest` is then swapped with a
/// rename. A reader who opens `latest/content` therefore always sees a whole snapshot, even if
/// fetchd is killed at any instant. Callers must not commit two snapshots of the same handler
/// at once (the daemon runs each handler at most once at a time).
public final class SnapshotStore: Sendable {
    /// The outcome of committing a staged file.
    public enum CommitOutcome: Sendable, Equatable {
        /// A new version was written and is now `latest`.
        case written(SnapshotMetadata)
        /// The content is byte-identical to `latest`; nothing was written.
        case unchanged(SnapshotMetadata)
    }

    /// The cache directory.
    public let root: String
    /// The total size above which the oldest non-latest versions are evicted.
    public let maxTotalBytes: Int
    private let evictionLock = Mutex(())

    /// Opens (and creates) the cache at `root`, clearing debris left by an interrupted write.
    public init(root: String, maxTotalBytes: Int = Defaults.cacheMaxBytes) throws(DurableFile.Failure) {
        self.root = root
        self.maxTotalBytes = maxTotalBytes
        try DurableFile.makeDirectory(root)
        for handler in handlerNames() { recover(handler: handler) }
    }

    /// The folder of `handler`'s snapshots.
    public func directory(of handler: String) -> String { "\(root)/\(handler)" }

    /// The stable path of the newest snapshot's content.
    public func latestContentPath(of handler: String) -> String { "\(directory(of: handler))/latest/content" }

    /// A fresh path where a handler writes its next snapshot (`FETCHD_OUTPUT`). It is on the same
    /// file system as the cache so committing it is a rename, not a copy.
    public func stagingPath(for handler: String) throws(DurableFile.Failure) -> String {
        let staging = "\(directory(of: handler))/.staging"
        try DurableFile.makeDirectory(staging, mode: 0o700)
        return "\(staging)/\(UUID().uuidString.lowercased())"
    }

    /// Removes a staged file that will not be committed (failed or expired fetch).
    public func discard(stagedFile: String) { unlink(stagedFile) }

    /// Turns a staged file into the newest version, unless it equals `latest`.
    ///
    /// `template` supplies everything but `version`, `bytes` and `sha256`, which are computed here.
    public func commit(stagedFile: String, handler: String, template: SnapshotMetadata, retain: Int)
        throws -> CommitOutcome
    {
        // Only a regular file is published: a handler that put a symlink at FETCHD_OUTPUT
        // could otherwise make fetchd publish (and chmod) any file it can read.
        var info = stat()
        guard lstat(stagedFile, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            discard(stagedFile: stagedFile)
            throw DurableFile.Failure(operation: "publish (not a regular file)", path: stagedFile, code: EINVAL)
        }
        let (digest, bytes) = try Self.sha256(ofFile: stagedFile)
        if let latest = latest(of: handler), latest.sha256 == digest, latest.bytes == bytes {
            discard(stagedFile: stagedFile)
            return .unchanged(latest)
        }
        let handlerDirectory = directory(of: handler)
        let versionsDirectory = "\(handlerDirectory)/versions"
        try DurableFile.makeDirectory(versionsDirectory)
        let version = Self.versionName(sequence: (versionNames(of: handler).last.flatMap(Self.sequence(of:)) ?? 0) + 1,
                                       at: template.fetchedAt)
        var metadata = template
        metadata.version = version
        metadata.bytes = bytes
        metadata.sha256 = digest
        metadata.handler = handler

        // Assemble under a hidden name; `versions/<version>` only ever appears complete.
        let incoming = "\(versionsDirectory)/.incoming-\(version)"
        try DurableFile.makeDirectory(incoming)
        try DurableFile.sync(file: stagedFile)
        chmod(stagedFile, 0o644)
        try DurableFile.rename(stagedFile, to: "\(incoming)/content")
        try DurableFile.write(try metadata.encoded(), to: "\(incoming)/meta.json")
        try DurableFile.rename(incoming, to: "\(versionsDirectory)/\(version)")
        try DurableFile.sync(directory: versionsDirectory)
        try DurableFile.replaceSymlink(at: "\(handlerDirectory)/latest", target: "versions/\(version)")
        prune(handler: handler, retain: retain)
        enforceCacheLimit()
        return .written(metadata)
    }

    /// The newest snapshot's metadata, or nil when the handler has none.
    public func latest(of handler: String) -> SnapshotMetadata? {
        guard let data = FileManager.default.contents(atPath: "\(directory(of: handler))/latest/meta.json") else { return nil }
        return try? SnapshotMetadata.decode(data)
    }

    /// Version directory names of `handler`, oldest first.
    public func versionNames(of handler: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "\(directory(of: handler))/versions")) ?? []
        return names.filter { !$0.hasPrefix(".") && Self.sequence(of: $0) != nil }.sorted()
    }

    /// Deletes all but the newest `retain` versions of `handler`; `latest` is never deleted.
    public func prune(handler: String, retain: Int) {
        let names = versionNames(of: handler)
        let current = currentVersion(of: handler)
        for name in names.dropLast(max(retain, 1)) where name != current {
            removeTree("\(directory(of: handler))/versions/\(name)")
        }
    }

    /// Evicts the oldest non-latest versions across all handlers until the cache fits `maxTotalBytes`.
    public func enforceCacheLimit() {
        evictionLock.withLock { _ in
            var candidates: [(date: String, path: String, size: Int)] = []
            var total = 0
            for handler in handlerNames() {
                let current = currentVersion(of: handler)
                for name in versionNames(of: handler) {
                    let path = "\(directory(of: handler))/versions/\(name)"
                    let size = Self.treeSize(path)
                    total += size
                    // Order by the timestamp part so handlers' versions interleave by age.
                    if name != current { candidates.append((String(name.drop(while: { $0 != "-" })), path, size)) }
                }
            }
            for candidate in candidates.sorted(by: { $0.date < $1.date }) where total > maxTotalBytes {
                removeTree(candidate.path)
                total -= candidate.size
            }
        }
    }

    /// The version `latest` points at.
    public func currentVersion(of handler: String) -> String? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory(of: handler))/latest")
        else { return nil }
        return (target as NSString).lastPathComponent
    }

    /// Handler folders present in the cache.
    public func handlerNames() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter(HandlerName.isValid).sorted()
    }

    /// Clears what an interrupted commit can leave behind and re-points `latest` at the newest
    /// complete version (a crash between the version rename and the link swap leaves it one behind).
    public func recover(handler: String) {
        let handlerDirectory = directory(of: handler)
        removeTree("\(handlerDirectory)/.staging")
        let versionsDirectory = "\(handlerDirectory)/versions"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: versionsDirectory)) ?? [] where name.hasPrefix(".") {
            removeTree("\(versionsDirectory)/\(name)")
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: handlerDirectory)) ?? [] where name.hasPrefix("latest.tmp") {
            unlink("\(handlerDirectory)/\(name)")
        }
        if let newest = versionNames(of: handler).last, currentVersion(of: handler) != newest {
            try? DurableFile.replaceSymlink(at: "\(handlerDirectory)/latest", target: "versions/\(newest)")
        }
    }

    /// SHA-256 (lower-case hex) and size of a file, read in chunks so large snapshots stay cheap.
    public static func sha256(ofFile path: String) throws -> (digest: String, bytes: Int) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw DurableFile.Failure(operation: "open", path: path, code: errno)
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        var bytes = 0
        while let chunk = try handle.read(upToCount: 256 * 1024), !chunk.isEmpty {
            hasher.update(data: chunk)
            bytes += chunk.count
        }
        return (hasher.finalize().map { String(format: "%02x", $0) }.joined(), bytes)
    }

    static func versionName(sequence: Int, at date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return String(format: "%08d-", sequence) + formatter.string(from: date)
    }

    static func sequence(of version: String) -> Int? {
        guard let dash = version.firstIndex(of: "-") else { return nil }
        return Int(version[..<dash])
    }

    private func removeTree(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

    private static func treeSize(_ path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.reduce(0) { total, name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: "\(path)/\(name)")
            return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
        }
    }
}
