import FetchdPush
import FetchdState
import Foundation

/// The state database as FetchdPush's storage: its `push_event` and `push_pending` tables
/// (`PushTables`), each `PendingPush` one row. The two modules never see each other; this is
/// the only place that knows both.
struct StatePushStorage: PushStorage {
    /// The state database.
    let state: StateStore

    /// The state database's path.
    var location: String { state.path }

    /// `body` in one write transaction of the state database.
    func write<T>(_ body: (any PushRecords) throws -> T) throws -> T {
        try state.pushes.write { transaction in try body(Records(transaction: transaction)) }
    }

    /// Every row of `push_pending`, earliest due first.
    func pending() throws -> [PendingPush] {
        try state.pushes.pending().map(PendingPush.init(stored:))
    }

    /// Deletes `push`'s row, unless a newer push of its handler replaced it.
    func remove(_ push: PendingPush) throws {
        try state.pushes.remove(of: push.handler, receivedAt: push.receivedAt)
    }

    /// One write transaction's view of the tables.
    private struct Records: PushRecords {
        /// The transaction the records are read and written in.
        let transaction: PushTables.Transaction

        /// `handler`'s row of `push_pending`, if any.
        func pending(of handler: String) throws -> PendingPush? {
            try transaction.pending(of: handler).map(PendingPush.init(stored:))
        }

        /// Writes `push` as its handler's one row of `push_pending`.
        func save(_ push: PendingPush) throws {
            try transaction.save(handler: push.handler, dueAt: push.dueAt, data: push.data, receivedAt: push.receivedAt,
                                 pushes: push.pushes, owner: push.owner)
        }

        /// The `push_event` times of `handler` after `start`, oldest first.
        func counted(of handler: String, after start: Date) throws -> [Date] {
            try transaction.counted(of: handler, after: start)
        }

        /// Adds a `push_event` of `handler` at `date`, deleting its events before `oldest`.
        func count(_ handler: String, at date: Date, forgetting oldest: Date) throws {
            try transaction.count(handler, at: date, forgetting: oldest)
        }
    }
}

extension PendingPush {
    /// The pending push a row of `push_pending` holds.
    init(stored: StoredPush) {
        self.init(handler: stored.handler, dueAt: stored.dueAt, data: stored.data, receivedAt: stored.receivedAt,
                  pushes: stored.pushes, owner: stored.owner)
    }
}
