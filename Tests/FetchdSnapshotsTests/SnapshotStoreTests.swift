import FetchdSnapshots
import FetchdTestSupport
import Foundation
import Testing

/// The snapshot store's layout, deduplication, pruning, eviction and recovery.
struct SnapshotStoreTests {
    /// Writes `text` at `handler`'s staging path, as a handler would (also for the batch tests).
    func stage(_ store: SnapshotStore, _ handler: String, _ text: String) throws -> String {
        let path = try store.staging.versionPath(for: handler)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Metadata for a snapshot of `handler`, all but what `prepare` fills in.
    func template(_ handler: String) -> SnapshotMetadata {
        SnapshotMetadata(handler: handler, fetchedAt: Date(), durationMilliseconds: 12, contentType: "text/plain",
                         trigger: "timer")
    }

    @Test func commitWritesAVersionAndPointsLatestAtIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.path)
        let outcome = try store.commit(stagedFile: try stage(store, "news", "hello"), handler: "news",
                                       template: template("news"), retain: 3)
        guard case .written(let metadata) = outcome else { Issue.record("expected a write, got \(outcome)"); return }
        #expect(metadata.bytes == 5)
        #expect(metadata.sha256 == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
        #expect(try String(contentsOfFile: store.latestContentPath(of: "news"), encoding: .utf8) == "hello")
        let latest = try #require(store.latest(of: "news"))
        #expect(latest.version == metadata.version && latest.sha256 == metadata.sha256)
        #expect(abs(latest.fetchedAt.timeIntervalSince(metadata.fetchedAt)) < 0.001)
        #expect(store.currentVersion(of: "news") == metadata.version)
        let onDisk = try SnapshotMetadata.decode(try Data(contentsOf: URL(fileURLWithPath: directory.file("news/versions/\(metadata.version)/meta.json"))))
        #expect(onDisk.contentType == "text/plain")
        // Readable by other users (the staging area is private to the daemon).
        let handlerMode = try FileManager.default.attributesOfItem(atPath: directory.file("news"))[.posixPermissions] as? Int
        let contentMode = try FileManager.default.attributesOfItem(atPath: store.latestContentPath(of: "news"))[.posixPermissions] as? Int
        #expect(handlerMode == 0o755 && contentMode == 0o644)
        #expect(onDisk.trigger == "timer")
    }

    @Test func identicalContentIsUnchangedAndWritesNothing() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.path)
        _ = try store.commit(stagedFile: try stage(store, "news", "same"), handler: "news", template: template("news"), retain: 3)
        let second = try stage(store, "news", "same")
        let outcome = try store.commit(stagedFile: second, handler: "news", template: template("news"), retain: 3)
        guard case .unchanged = outcome else { Issue.record("expected unchanged, got \(outcome)"); return }
        #expect(store.versionNames(of: "news").count == 1)
        #expect(!FileManager.default.fileExists(atPath: second), "the staged duplicate was not removed")
    }

    @Test func retainKeepsTheNewestVersions() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.path)
        for index in 0..<6 {
            _ = try store.commit(stagedFile: try stage(store, "news", "v\(index)"), handler: "news",
                                 template: template("news"), retain: 2)
        }
        let names = store.versionNames(of: "news")
        #expect(names.count == 2)
        #expect(names.last == store.currentVersion(of: "news"))
        #expect(try String(contentsOfFile: store.latestContentPath(of: "news"), encoding: .utf8) == "v5")
    }

    @Test func cacheLimitEvictsOldestButNeverLatest() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.path, maxTotalBytes: 3000)
        let big = String(repeating: "x", count: 1000)
        for index in 0..<4 {
            for handler in ["a", "b"] {
                _ = try store.commit(stagedFile: try stage(store, handler, big + "\(handler)\(index)"), handler: handler,
                                     template: template(handler), retain: 10)
            }
        }
        // Every handler keeps its latest even though two latests plus metadata approach the cap.
        #expect(store.latest(of: "a") != nil)
        #expect(store.latest(of: "b") != nil)
        let total = store.versionNames(of: "a").count + store.versionNames(of: "b").count
        #expect(total <= 3, "eviction kept \(total) versions over a 3000-byte cap")
    }

    /// A handler removed for good takes its versions out of the cache's count: they no longer
    /// push other handlers' versions out.
    @Test func aRemovedHandlerNoLongerCountsAgainstTheCap() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.path, maxTotalBytes: 3000)
        let text = String(repeating: "x", count: 200)
        for index in 0..<10 {
            _ = try store.commit(stagedFile: try stage(store, "gone@1000", text + "\(index)"), handler: "gone@1000",
                                 template: template("gone@1000"), retain: 10)
        }
        store.removeHandler("gone@1000")
        #expect(!FileManager.default.fileExists(atPath: store.directory(of: "gone@1000")))
        #expect(!store.handlerNames().contains("gone@1000"))
        for index in 0..<3 {
            _ = try store.commit(stagedFile: try stage(store, "a", text + "\(index)"), handler: "a", template: template("a"), retain: 10)
        }
        #expect(store.versionNames(of: "a").count == 3, "versions of a removed handler still counted against the cap")
    }

    /// A fetch that brings nothing to publish leaves no staging folder, even when its program
    /// left other files beside its output; a first version makes its handler's folders.
    @Test func discardRemovesTheStagingFolder() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.path)
        let failed = try stage(store, "news", "half")
        try Data("tmp".utf8).write(to: URL(fileURLWithPath: failed + ".part"))
        store.staging.discard(stagedFile: failed)
        let empty = try stage(store, "news", "")
        unlink(empty)  // a fetch that wrote nothing (304)
        store.staging.discard(stagedFile: empty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.staging.directory).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: store.directory(of: "news")))
        _ = try store.commit(stagedFile: try stage(store, "news", "one"), handler: "news", template: template("news"), retain: 3)
        #expect(try String(contentsOfFile: store.latestContentPath(of: "news"), encoding: .utf8) == "one")
    }

    @Test func recoveryClearsDebrisAndRepointsLatest() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // The first store is gone (its process ended) before the restarted one opens the cache.
        let (names, partial) = try { () throws -> ([String], String) in
            let store = try SnapshotStore(root: directory.path)
            _ = try store.commit(stagedFile: try stage(store, "news", "one"), handler: "news", template: template("news"), retain: 5)
            _ = try store.commit(stagedFile: try stage(store, "news", "two"), handler: "news", template: template("news"), retain: 5)
            let names = store.versionNames(of: "news")
            // Simulate crashes: a link swap that never happened, a half-built version, a staged file.
            try FileManager.default.removeItem(atPath: directory.file("news/latest"))
            try FileManager.default.createSymbolicLink(atPath: directory.file("news/latest"), withDestinationPath: "versions/\(names[0])")
            // (`.incoming-x` and `news/.staging` are where earlier releases assembled and staged.)
            try FileManager.default.createDirectory(atPath: directory.file("news/versions/.incoming-x"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: directory.file("news/.staging"), withIntermediateDirectories: true)
            return (names, try stage(store, "news", "partial"))
        }()
        let store = try SnapshotStore(root: directory.path)
        #expect(store.currentVersion(of: "news") == names[1])
        #expect(!FileManager.default.fileExists(atPath: directory.file("news/versions/.incoming-x")))
        #expect(!FileManager.default.fileExists(atPath: directory.file("news/.staging")))
        #expect(!FileManager.default.fileExists(atPath: partial))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.staging.directory).isEmpty)
        #expect(store.handlerNames() == ["news"])
    }
}

extension SnapshotStoreTests {
    /// One process at a time has a cache open: a second store would clear the first one's staging.
    @Test func aSecondStoreOnTheSameCacheIsRefusedUntilTheFirstIsGone() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var first: SnapshotStore? = try SnapshotStore(root: directory.path)
        let staged = try stage(try #require(first), "news", "in progress")
        let refusal = #expect(throws: CacheLock.Busy.self) { try SnapshotStore(root: directory.path) }
        #expect(refusal?.holder == getpid())
        #expect(refusal?.description.hasPrefix("another fetchd (pid \(getpid())) is using the cache \(directory.path):") == true)
        #expect(FileManager.default.fileExists(atPath: staged), "the refused store cleared the first one's staging")
        #expect(try String(contentsOfFile: directory.file(".lock"), encoding: .utf8) == "\(getpid())\n")
        var info = stat()
        #expect(lstat(directory.file(".lock"), &info) == 0 && info.st_mode & 0o777 == 0o600, "others could take the lock")
        first = nil
        _ = try SnapshotStore(root: directory.path)
        #expect(!FileManager.default.fileExists(atPath: staged))
    }

    /// A symlink planted at `.lock` is not followed (a root-run fetchd would truncate its target).
    @Test func aSymlinkAtTheLockIsNotFollowed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let target = try directory.write("precious\n", to: "precious.txt")
        let cache = directory.file("cache")
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: cache + "/.lock", withDestinationPath: target)
        #expect(throws: DurableFile.Failure.self) { try SnapshotStore(root: cache) }
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "precious\n")
    }

    /// Run as root on a cache another user owns (`fetchd --once` by an administrator), the lock
    /// file is made the cache owner's, so that the service can still open it afterwards.
    @Test(.enabled(if: geteuid() == 0, "needs root to own files as another user"))
    func theLockFileBelongsToTheCachesOwner() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = directory.file("cache")
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        #expect(chown(cache, 65_534, 65_534) == 0)
        _ = try SnapshotStore(root: cache)
        var info = stat()
        #expect(stat(cache + "/.lock", &info) == 0 && info.st_uid == 65_534 && info.st_gid == 65_534)
    }
}

/// What a handler leaves at its output path is published only if it is a regular file.
struct SnapshotStorePublishingTests {
    @Test func aSymlinkAtTheOutputPathIsRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.file("cache"))
        let secret = try directory.write("secret", to: "secret.txt")
        let staged = store.staging.path(for: "news")
        try FileManager.default.createSymbolicLink(atPath: staged, withDestinationPath: secret)
        let template = SnapshotMetadata(handler: "news", fetchedAt: Date(), durationMilliseconds: 1, trigger: "timer")
        #expect(throws: DurableFile.Failure.self) {
            _ = try store.commit(stagedFile: staged, handler: "news", template: template, retain: 3)
        }
        #expect(store.latest(of: "news") == nil)
        #expect(!FileManager.default.fileExists(atPath: staged))
    }

    /// A hard link to another file is refused too: publishing would chmod that file and show
    /// its content to every reader (a program running as a less privileged user could name a
    /// file only fetchd may read).
    @Test func aHardLinkAtTheOutputPathIsRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.file("cache"))
        let secret = try directory.write("secret", to: "secret.txt")
        chmod(secret, 0o600)
        let staged = store.staging.path(for: "news")
        #expect(link(secret, staged) == 0)
        let template = SnapshotMetadata(handler: "news", fetchedAt: Date(), durationMilliseconds: 1, trigger: "timer")
        #expect(throws: DurableFile.Failure.self) {
            _ = try store.commit(stagedFile: staged, handler: "news", template: template, retain: 3)
        }
        #expect(store.latest(of: "news") == nil)
        var info = stat()
        #expect(stat(secret, &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_nlink == 1)
    }
}
