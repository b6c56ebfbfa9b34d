import FetchdCore
@testable import FetchdState
import FetchdTestSupport
import Foundation
import GRDB
import Testing

/// The history table clustered by handler: ids still unique and rising, and a database from
/// before the change upgraded without losing a row or reusing an id.
struct HistoryLayoutTests {
    private func fetch(_ handler: String, at seconds: Double) -> CompletedFetch {
        let start = Date(timeIntervalSince1970: 1_800_000_000 + seconds)
        return CompletedFetch(handler: handler, trigger: .timer, startedAt: start, finishedAt: start.addingTimeInterval(0.1),
                              result: .noData)
    }

    @Test func idsRiseAcrossHandlersBatchesAndReopening() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        var ids: [Int64] = []
        do {
            let store = try StateStore(path: path)
            ids += try store.record(["b", "a", "c"].map { fetch($0, at: 0) }).compactMap(\.id)
            ids += [try store.record(fetch("a", at: 60)).id].compactMap { $0 }
        }
        let store = try StateStore(path: path)
        ids += try store.record(["c", "a"].map { fetch($0, at: 120) }).compactMap(\.id)
        #expect(ids == [1, 2, 3, 4, 5, 6])
        #expect(try store.history(of: "a", limit: 10).compactMap(\.id) == [6, 4, 2])
    }

    @Test func trimmingKeepsEachHandlersNewestRows() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try StateStore(path: directory.file("state.sqlite"))
        for round in 0..<12 {
            let batch = ["fast", "fast", "slow"].prefix(round.isMultiple(of: 4) ? 3 : 2)
            _ = try store.record(batch.map { fetch($0, at: Double(round)) }, historyLimit: 5)
        }
        #expect(try store.history(of: "fast", limit: 100).count == 5)
        #expect(try store.history(of: "slow", limit: 100).map(\.startedAt.timeIntervalSince1970) == [8, 4, 0].map { 1_800_000_000 + $0 })
        let since = Date(timeIntervalSince1970: 1_800_000_008)  // fast: 5 kept of 6; slow: round 8
        #expect(try store.attempts(of: ["fast", "slow"], since: since).count == 6)
    }

    /// A database written before the change: rows kept with their ids, and the next id after the
    /// highest ever handed out, even when the newest rows were trimmed away.
    @Test func anOlderDatabaseIsUpgradedWithEveryRow() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        do {
            let queue = try DatabaseQueue(path: path)
            try StateStore.migrator.migrate(queue, upTo: "v5: durable immediate pushes")
            try queue.write { db in
                for (id, handler) in [(1, "a"), (2, "b"), (3, "a"), (4, "b"), (5, "b")] {
                    try db.execute(sql: """
                        INSERT INTO fetch_history (id, handler, started_at, finished_at, duration_ms, result, trigger)
                        VALUES (?, ?, ?, ?, 10, 'noData', 'timer')
                        """, arguments: [id, handler, StoredDate.text(fetch(handler, at: Double(id)).startedAt),
                                         StoredDate.text(fetch(handler, at: Double(id)).finishedAt)])
                }
                try db.execute(sql: "DELETE FROM fetch_history WHERE id >= 4")
            }
        }
        let store = try StateStore(path: path)
        #expect(try store.history(of: "a", limit: 10).compactMap(\.id) == [3, 1])
        #expect(try store.history(of: "b", limit: 10).compactMap(\.id) == [2])
        #expect(try store.history(of: "a", limit: 10).first?.startedAt == fetch("a", at: 3).startedAt)
        #expect(try store.record(fetch("b", at: 10)).id == 6)
        #expect(try store.integrityCheck())
    }
}
