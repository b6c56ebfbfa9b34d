import FetchdPush
import FetchdState
import Foundation

/// The state database as FetchdPush's storage: its `push_event` and `push_pending` tables
/// (`PushTables`), each `PendingPush` one row. The two modules never see each other; this is
/// the only place that knows both.
struct StatePushStorage: PushStorage {
    /// The state database.
    let state: StateStore

    var location: String { state.path }

    func write<T>(_ body: (any PushRecords) throws -> T) throws -> T {
        try state.pushes.write { transaction in try body(Records(transaction: transaction)) }
    }

    func pending() throws -> [PendingPush] {
        try state.pushes.pending().map(PendingPush.init(stored:))
    }

    func remove(_ push: PendingPush) throws {
        try state.pushes.remove(of: push.handler, receivedAt: push.receivedAt)
    }

    func counted(of handler: String, since date: Date) throws -> [Date] {
        try state.pushes.counted(of: handler, since: date)
    }

    /// One write transaction's view of the tables.
    private struct Records: PushRecords {
        let transaction: PushTables.Transaction

        func pending(of handler: String) throws -> PendingPush? {
            try transaction.pending(of: handler).map(PendingPush.init(stored:))
        }

        func save(_ push: PendingPush) throws {
            try transaction.save(handler: push.handler, dueAt: push.dueAt, data: push.data, receivedAt: push.receivedAt,
                                 pushes: push.pushes, owner: push.owner)
        }

        func counted(of handler: String, after start: Date) throws -> [Date] {
            try transaction.counted(of: handler, after: start)
        }

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
