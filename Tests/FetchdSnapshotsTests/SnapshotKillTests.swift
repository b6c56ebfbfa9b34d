import FetchdSnapshots
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Kills a real snapshot-writing process at random moments, hundreds of times, and checks
/// after every kill that what a reader sees through `latest` is whole and matches its metadata.
@Suite(.serialized)
struct SnapshotKillTests {
    /// How many times the writer is killed; the issue asks for at least 200.
    static let kills = 220

    @Test func everyVisibleLatestIsCompleteAfterSIGKILL() async throws {
        let helper = TestBinaries.path(of: "fetchd-test-helper")
        try #require(FileManager.default.isExecutableFile(atPath: helper), "build the package first: \(helper)")
        let directory = try TemporaryDirectory("snapshot-kill")
        defer { directory.remove() }
        let cache = directory.file("cache")
        var generator = SystemRandomNumberGenerator()
        var checked = 0
        var versionsSeen = Set<String>()
        for round in 0..<Self.kills {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: helper)
            process.arguments = ["snapshot-writer", cache, "news", String(round + 1)]
            try process.run()
            // Let it get going (recovery, then some commits), then kill it somewhere mid-flight.
            try await Task.sleep(for: .milliseconds(Int.random(in: 5...150, using: &generator)))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "round \(round): the writer ended on its own")

            // A reader that never runs recovery: `latest` must still be whole.
            let latest = "\(cache)/news/latest"
            guard FileManager.default.fileExists(atPath: latest + "/content") else { continue }
            let metadataData = try #require(FileManager.default.contents(atPath: latest + "/meta.json"),
                                            "round \(round): latest has content but no meta.json")
            let metadata = try SnapshotMetadata.decode(metadataData)
            let (digest, bytes) = try FileDigest.sha256(ofFile: latest + "/content")
            #expect(digest == metadata.sha256, "round \(round): latest content does not match its sha256")
            #expect(bytes == metadata.bytes, "round \(round): latest size differs from its metadata")
            checked += 1
            versionsSeen.insert(metadata.version)
        }
        #expect(checked >= Self.kills / 2, "too few rounds produced a snapshot to check (\(checked))")
        #expect(versionsSeen.count > 10, "the writer rarely got past its first commit")

        // What the last kill left, before any recovery: half-written versions only under
        // `.staging` (the writer's own), never a hidden folder among the published versions.
        let staged = (try? FileManager.default.contentsOfDirectory(atPath: "\(cache)/.staging")) ?? []
        #expect(staged.allSatisfy { $0.hasPrefix("news.") }, "staged outside the writer's names: \(staged)")
        let hiddenBefore = try FileManager.default.contentsOfDirectory(atPath: "\(cache)/news/versions").filter { $0.hasPrefix(".") }
        #expect(hiddenBefore.isEmpty, "a killed writer left \(hiddenBefore) among the versions")

        // After recovery nothing half-written is left, and retain holds.
        let store = try SnapshotStore(root: cache)
        let handlerDirectory = store.directory(of: "news")
        let debris = try FileManager.default.contentsOfDirectory(atPath: handlerDirectory + "/versions")
            .filter { $0.hasPrefix(".") }
        #expect(debris.isEmpty, "recovery left \(debris)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.staging.directory).isEmpty,
                "reopening did not clear the \(staged.count) staged entries the kills left")
        #expect(store.currentVersion(of: "news") == store.versionNames(of: "news").last)
    }
}
