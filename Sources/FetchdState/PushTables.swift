import FetchdCore
import Foundation
import GRDB

/// One row of `push_pending`, a handler's pending push as stored: its columns, by name. What
/// they mean (deferred or admitted, when it may run) is FetchdPush's `PendingPush` to say;
/// this module only keeps them.
public struct StoredPush: Sendable, Equatable {
    /// `handler`.
    public var handler: String
    /// `due_at`.
    public var dueAt: Date
    /// `data`.
    public var data: String?
    /// `received_at`, to the millisecond: tells this row from a later one of its handler.
    public var receivedAt: Date
    /// `pushes`.
    public var pushes: Int
    /// `owner`: nil for a deferred push.
    public var owner: String?
}

/// The push rate limit's two tables in the state database: when each handler's push fetches
/// were counted (`push_event`) and its pending push (`push_pending`). Plain storage: the
/// rules that read and write them in one transaction are FetchdPush's `PushLedger`.
public struct PushTables: Sendable {
    let pool: DatabasePool

    /// The tables as one write transaction sees them.
    public struct Transaction {
        let db: Database

        /// The pending push of `handler`, if any.
        public func pending(of handler: String) throws -> StoredPush? {
            try Row.fetchOne(db, sql: "SELECT * FROM push_pending WHERE handler = ?", arguments: [handler])
                .map(PushTables.storedPush(from:))
        }

        /// Keeps a pending push of `handler` (the fields of `StoredPush`), replacing any.
        public func save(handler: String, dueAt: Date, data: String?, receivedAt: Date, pushes: Int, owner: String?) throws {
            try db.execute(sql: """
                INSERT INTO push_pending (handler, due_at, data, received_at, pushes, owner) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(handler) DO UPDATE SET due_at = excluded.due_at, data = excluded.data,
                    received_at = excluded.received_at, pushes = excluded.pushes, owner = excluded.owner
                """, arguments: [handler, StoredDate.text(dueAt), data, StoredDate.text(receivedAt), pushes, owner])
        }

        /// When the push fetches of `handler` after `start` were counted, oldest first.
        public func counted(of handler: String, after start: Date) throws -> [Date] {
            try StoredDate.fetchAll(db, "at", sql: "SELECT at FROM push_event WHERE handler = ? AND at > ? ORDER BY at",
                                    arguments: [handler, StoredDate.text(start)])
        }

        /// Counts a push fetch of `handler` at `date`, forgetting its counts before `oldest`.
        public func count(_ handler: String, at date: Date, forgetting oldest: Date) throws {
            try db.execute(sql: "INSERT INTO push_event (handler, at) VALUES (?, ?)", arguments: [handler, StoredDate.text(date)])
            try db.execute(sql: "DELETE FROM push_event WHERE handler = ? AND at < ?",
                           arguments: [handler, StoredDate.text(oldest)])
        }
    }

    /// Runs `body` in one write transaction: all of its changes are on disk when this returns,
    /// or none of them.
    public func write<T>(_ body: (Transaction) throws -> T) throws -> T {
        try pool.write { db in try body(Transaction(db: db)) }
    }

    /// Removes the pending push of `handler` stored with `receivedAt`; a newer one stays.
    public func remove(of handler: String, receivedAt: Date) throws {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM push_pending WHERE handler = ? AND received_at = ?",
                           arguments: [handler, StoredDate.text(receivedAt)])
        }
    }

    /// Every pending push, earliest due first.
    public func pending() throws -> [StoredPush] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM push_pending ORDER BY due_at, handler").map(Self.storedPush(from:))
        }
    }

    /// When the push fetches of `handler` since `date` were counted, oldest first.
    public func counted(of handler: String, since date: Date) throws -> [Date] {
        try pool.read { db in
            try StoredDate.fetchAll(db, "at", sql: "SELECT at FROM push_event WHERE handler = ? AND at >= ? ORDER BY at",
                                    arguments: [handler, StoredDate.text(date)])
        }
    }

    private static func storedPush(from row: Row) throws -> StoredPush {
        StoredPush(handler: row["handler"], dueAt: try StoredDate.date(in: row, "due_at"), data: row["data"],
                   receivedAt: try StoredDate.date(in: row, "received_at"), pushes: row["pushes"], owner: row["owner"])
    }
}

extension StateStore {
    /// The push rate limit's tables.
    public var pushes: PushTables { PushTables(pool: pool) }
}
