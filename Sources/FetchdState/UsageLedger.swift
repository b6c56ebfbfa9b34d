import FetchdCore
import Foundation
import GRDB

/// One recorded use of a handler's content.
public struct UsageRecord: Sendable, Equatable {
    /// When it happened.
    public var at: Date
    /// The local clock's UTC offset then, in seconds.
    public var utcOffsetSeconds: Int
    /// Where it was learned from (`explicit`, ...).
    public var source: String
}

/// The uses of each handler's content in the state database, kept for the usage model: what
/// the planner learns the user's times from.
public struct UsageLedger: Sendable {
    let pool: DatabasePool

    /// How long uses are kept, in seconds (the usage model has forgotten them by then).
    public static let memorySeconds = 60.0 * 86_400

    /// Records a use durably.
    public func record(of handler: String, at date: Date, utcOffsetSeconds: Int, source: String) throws {
        try pool.write { db in
            try db.execute(sql: "INSERT INTO usage_event (handler, at, utc_offset_seconds, source) VALUES (?, ?, ?, ?)",
                           arguments: [handler, StoredDate.text(date), utcOffsetSeconds, source])
            try db.execute(sql: "DELETE FROM usage_event WHERE handler = ? AND at < ?",
                           arguments: [handler, StoredDate.text(date.addingTimeInterval(-Self.memorySeconds))])
        }
    }

    /// The uses of `handler` since `date`, oldest first.
    public func uses(of handler: String, since date: Date) throws -> [UsageRecord] {
        try pool.read { db in try Self.uses(of: handler, since: date, in: db) }
    }

    private static func uses(of handler: String, since date: Date, in db: Database) throws -> [UsageRecord] {
        try Row.fetchAll(
            db, sql: "SELECT at, utc_offset_seconds, source FROM usage_event WHERE handler = ? AND at >= ? ORDER BY at, id",
            arguments: [handler, StoredDate.text(date)]
        ).map { row in
            UsageRecord(at: try StoredDate.date(in: row, "at"), utcOffsetSeconds: row["utc_offset_seconds"], source: row["source"])
        }
    }

    /// The uses of `handler` recorded in the database at `path`, opened read-only (for
    /// `fetchctl simulate --from-state` beside a running daemon), oldest first.
    public static func uses(inDatabaseAt path: String, of handler: String) throws -> [UsageRecord] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        return try queue.read { db in try uses(of: handler, since: .distantPast, in: db) }
    }
}

extension StateStore {
    /// The recorded uses of every handler's content.
    public var usage: UsageLedger { UsageLedger(pool: pool) }
}
