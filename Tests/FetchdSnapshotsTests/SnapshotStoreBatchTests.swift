import FetchdSnapshots
import FetchdTestSupport
import Foundation
import Testing

/// `prepare` assembles a version out of sight; the batch publishes it, whatever the handler's
/// folder holds or lacks (with `SnapshotStoreTests`' staging helpers).
extension SnapshotStoreTests {
    private func pending(_ prepared: PreparedVersion) throws -> PendingVersion {
        guard case .pending(let pending) = prepared else { throw CocoaError(.fileWriteUnknown) }
        return pending
    }

    @Test func prepareAssemblesAHiddenVersionThatOnlyTheCommitPublishes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.path)
        let staged = try stage(store, "news", "hello")
        let version = try pending(try store.prepare(stagedFile: staged, handler: "news", template: template("news"), retain: 3))
        // Assembled where it was staged: the fetch's own folder under `.staging`.
        let folder = version.folder
        #expect(folder.hasPrefix(directory.file(".staging/news.")) && staged == "\(folder)/content")
        #expect(try String(contentsOfFile: "\(folder)/content", encoding: .utf8) == "hello")
        #expect(FileManager.default.fileExists(atPath: "\(folder)/meta.json"))
        #expect(store.currentVersion(of: "news") == nil && store.versionNames(of: "news").isEmpty)
        let outcome = store.commit([version])
        #expect(try outcome.results[0].get().version == version.metadata.version)
        #expect(store.currentVersion(of: "news") == version.metadata.version)
        #expect(try String(contentsOfFile: store.latestContentPath(of: "news"), encoding: .utf8) == "hello")
        #expect(!FileManager.default.fileExists(atPath: folder))
    }

    @Test func aFirstVersionReplacesALatestLeftWithoutVersions() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.path)
        let staged = try stage(store, "news", "fresh")
        // A `latest` that names nothing (its versions deleted behind fetchd's back): the first
        // version's link cannot be made in place and must replace it.
        try FileManager.default.createDirectory(atPath: directory.file("news"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory.file("news/latest"), withDestinationPath: "versions/gone")
        let outcome = try store.commit(stagedFile: staged, handler: "news", template: template("news"), retain: 3)
        guard case .written(let metadata) = outcome else { Issue.record("expected a write, got \(outcome)"); return }
        #expect(store.currentVersion(of: "news") == metadata.version)
        #expect(try String(contentsOfFile: store.latestContentPath(of: "news"), encoding: .utf8) == "fresh")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.file("news")).filter { $0.hasPrefix("latest.tmp") }
        #expect(leftovers.isEmpty)
    }

    /// `versions` (or the whole handler folder) removed while the store runs: the store still
    /// believes it has versions, and the publish makes the folders again (a restarted store,
    /// which has none, makes them as for a first version).
    @Test(arguments: ["news/versions", "news"])
    func aFolderRemovedBehindTheStoresBackIsMadeAgain(removed: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try {
            let store = try SnapshotStore(root: directory.path)
            _ = try store.commit(stagedFile: try stage(store, "news", "one"), handler: "news", template: template("news"), retain: 3)
            try FileManager.default.removeItem(atPath: directory.file(removed))
            try? FileManager.default.removeItem(atPath: directory.file("news/latest"))
            let outcome = try store.commit(stagedFile: try stage(store, "news", "two"), handler: "news",
                                           template: template("news"), retain: 3)
            guard case .written = outcome else { Issue.record("expected a write, got \(outcome)"); return }
            #expect(try String(contentsOfFile: store.latestContentPath(of: "news"), encoding: .utf8) == "two")
            try FileManager.default.removeItem(atPath: directory.file(removed))
        }()  // the store is gone (its process ended) before the restarted one opens the cache
        let restarted = try SnapshotStore(root: directory.path)
        _ = try restarted.commit(stagedFile: try stage(restarted, "news", "three"), handler: "news",
                                 template: template("news"), retain: 3)
        #expect(try String(contentsOfFile: restarted.latestContentPath(of: "news"), encoding: .utf8) == "three")
    }

    /// What a program wrote (a file in `.staging`, not a version folder) is moved into a folder
    /// of its own: other files the program left beside it are not published.
    @Test func aProgramsOutputIsPublishedWithoutItsNeighbours() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.path)
        let output = store.staging.path(for: "news")
        try Data("body".utf8).write(to: URL(fileURLWithPath: output))
        try Data("junk".utf8).write(to: URL(fileURLWithPath: output + ".tmp"))
        let outcome = try store.commit(stagedFile: output, handler: "news", template: template("news"), retain: 3)
        guard case .written(let metadata) = outcome else { Issue.record("expected a write, got \(outcome)"); return }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.file("news/versions/\(metadata.version)"))
        #expect(files.sorted() == ["content", "meta.json"])
        #expect(try String(contentsOfFile: store.latestContentPath(of: "news"), encoding: .utf8) == "body")
    }

    @Test func theVersionReadAtTheStartOfAFetchDecidesWhatIsUnchanged() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SnapshotStore(root: directory.path)
        _ = try store.commit(stagedFile: try stage(store, "news", "same"), handler: "news", template: template("news"), retain: 3)
        let current = store.currentVersion(of: "news")
        let unchanged = try store.prepare(stagedFile: try stage(store, "news", "same"), handler: "news",
                                          template: template("news"), retain: 3, currentVersion: .read(current))
        guard case .unchanged = unchanged else { Issue.record("expected unchanged, got \(unchanged)"); return }
        // `.some(nil)`: the fetch began with no snapshot, so the same bytes are new data.
        let fresh = try store.prepare(stagedFile: try stage(store, "news", "same"), handler: "news",
                                      template: template("news"), retain: 3, currentVersion: .read(nil))
        guard case .pending(let version) = fresh else { Issue.record("expected a new version, got \(fresh)"); return }
        #expect(try store.commit([version]).results[0].get().version == version.metadata.version)
    }
}
