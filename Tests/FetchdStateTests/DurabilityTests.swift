import FetchdTestSupport
import FetchdCore
@testable import FetchdState
import Testing

/// What makes a recorded result survive a power loss.
@Suite struct DurabilityTests {
    /// The writer syncs the WAL at every commit (FULL), whatever the connection pool set up: a
    /// result is logged only once it is recorded, so it must be on the disk by then.
    @Test func theWriterSyncsEveryCommit() throws {
        let folder = try TemporaryDirectory("state-durability")
        let store = try StateStore(path: folder.file("state.sqlite"))
        #expect(try store.writerSynchronous() == 2, "PRAGMA synchronous is not FULL on the writer")
        // And still after the pool has been idle and written again.
        _ = try store.record(CompletedFetch(handler: "a", trigger: .timer, startedAt: .now, finishedAt: .now, result: .noData))
        #expect(try store.writerSynchronous() == 2)
    }
}
