import FetchdConfig
import FetchdCore
@testable import FetchdDaemon
import FetchdHandlers
import FetchdSnapshots
import FetchdState
import FetchdTestSupport
import Foundation
import Logging
import Testing

/// Where a fetch's result is decided: in `FetchPipeline.settle`, from the handler's completion
/// and what it wrote. Publishing only completes the result (its version) or, when the snapshot
/// cannot be published, fails it (`CompletedFetch.notPublished`); nothing else changes it.
struct ResultDecisionTests {
    private static func pipeline(in directory: TemporaryDirectory) throws -> FetchPipeline {
        FetchPipeline(snapshots: try SnapshotStore(root: directory.file("cache")),
                      state: try StateStore(path: directory.file("state.sqlite")), daemon: DaemonConfig(),
                      logger: Logger(label: "result-decision-test"))
    }

    /// Settles `completion` of handler `h` (at most `maxBytes`) over a staged file holding
    /// `content` (none: nothing written).
    private static func settle(_ pipeline: FetchPipeline, _ outcome: FetchRunner.Outcome, content: String?,
                               maxBytes: Int = Defaults.maxBytes) async throws -> ResultCommitter.Item {
        var handler = HandlerConfig(name: "h", options: .doNothing)
        handler.maxBytes = maxBytes
        let path = pipeline.snapshots.staging.path(for: "h")
        if let content { try content.write(toFile: path, atomically: false, encoding: .utf8) }
        return await pipeline.settle(handler, outcome: outcome, outputPath: path, trigger: .manual,
                                     startedAt: Date().addingTimeInterval(-1))
    }

    @Test func settlingDecidesEveryResult() async throws {
        let directory = try TemporaryDirectory("result-decision")
        defer { directory.remove() }
        let pipeline = try Self.pipeline(in: directory)
        let expired = try await Self.settle(pipeline, .init(completion: nil, expired: true), content: "late")
        #expect(expired.fetch.result == .expired && expired.snapshot == nil)
        let stopped = try await Self.settle(pipeline, .init(completion: nil, interrupted: true), content: nil)
        #expect(stopped.fetch.result == .failed(reason: "stopped: fetchd is shutting down"))
        let failed = try await Self.settle(pipeline, .init(completion: .failed(reason: "HTTP 500")), content: nil)
        #expect(failed.fetch.result == .failed(reason: "HTTP 500"))
        let nothing = try await Self.settle(pipeline, .init(completion: .noData()), content: "ignored")
        #expect(nothing.fetch.result == .noData && nothing.fetch.bytes == nil)
        let missing = try await Self.settle(pipeline, .init(completion: .newData()), content: nil)
        #expect(missing.fetch.result == .failed(reason: "reported newData but wrote no snapshot"))
        let large = try await Self.settle(pipeline, .init(completion: .newData()), content: "0123456789", maxBytes: 4)
        #expect(large.fetch.result.name == "failed" && large.fetch.result.reason?.hasPrefix("too large") == true)
        #expect(large.snapshot == nil)

        let new = try await Self.settle(pipeline, .init(completion: .newData()), content: "v1")
        #expect(new.fetch.result == .newData && new.fetch.bytes == 2 && new.snapshot != nil && new.fetch.version == nil)
        let published = await pipeline.committer.commit(new)
        #expect(published.result == .newData && published.version != nil && published.id != nil, "publishing completes it")
        let same = try await Self.settle(pipeline, .init(completion: .newData()), content: "v1")
        #expect(same.fetch.result == .noData && same.fetch.bytes == 2 && same.snapshot == nil,
                "content identical to the latest snapshot is noData")
    }

    @Test func aSnapshotThatCannotBePublishedFailsTheResultAndKeepsNothingOfIt() {
        let start = Date()
        var fetch = CompletedFetch(handler: "h", trigger: .push, startedAt: start, finishedAt: start.addingTimeInterval(1),
                                   result: .newData, bytes: 10, sha256: "ab", version: "v")
        fetch.validators = HTTPValidators(etag: "\"e\"", lastModified: nil)
        fetch.notBefore = start.addingTimeInterval(60)
        let failed = fetch.notPublished("No space left on device")
        #expect(failed.result == .failed(reason: "cannot write the snapshot: No space left on device"))
        #expect(failed.version == nil && failed.bytes == nil && failed.sha256 == nil && failed.validators == nil)
        #expect(failed.handler == "h" && failed.trigger == .push && failed.startedAt == start
                && failed.notBefore == fetch.notBefore, "the rest is the fetch's as settled")
    }
}
