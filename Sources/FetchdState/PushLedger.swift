import FetchdCore
import Foundation
import GRDB

/// A push (or several coalesced) waiting for the rate limit: one fetch at `dueAt` with the
/// newest push's data.
public struct PendingPush: Sendable, Equatable {
    /// The handler.
    public var handler: String
    /// When the fetch runs: the earliest time the handler's push limit allows it.
    public var dueAt: Date
    /// The newest push's data (newest wins), if it carried any.
    public var data: String?
    /// When the newest push arrived; tells this version of the pending push from a later one.
    public var receivedAt: Date
    /// How many pushes were coalesced into it.
    public var pushes: Int
    /// For a push admitted to fetch at once: the daemon instance that runs it (already counted
    /// against the limit). A row whose owner is not the running daemon was left by one that
    /// stopped before the fetch was recorded: the next wake runs it. Nil for a deferred push.
    public var owner: String?

    /// Creates a pending push.
    public init(handler: String, dueAt: Date, data: String?, receivedAt: Date, pushes: Int, owner: String? = nil) {
        self.handler = handler
        self.dueAt = dueAt
        self.data = data
        self.receivedAt = receivedAt
        self.pushes = pushes
        self.owner = owner
    }
}

/// What the rate limit made of a push.
public enum PushAdmission: Sendable, Equatable {
    /// Within the limit: fetch now. Counted, and kept (superseding any deferred push) until the
    /// fetch is recorded (`PushLedger.finish`), so an acknowledged push survives a crash.
    case now(PendingPush)
    /// Over the limit: coalesced into the pending push, which runs at its `dueAt`.
    case deferred(PendingPush)
}

/// What became of a pending push that was due.
public enum DuePush: Sendable, Equatable {
    /// Counted as a push fetch: run it now, then `PushLedger.finish` it.
    case run(PendingPush)
    /// The limit still has no room (it was lowered by a reload): moved to the new `dueAt`.
    case rescheduled(PendingPush)
}

/// The push rate limit's memory in the state database: when each handler's push fetches were
/// counted, and its pending push (deferred, or admitted and not yet recorded), so that a restart
/// forgets neither the count nor a push it acknowledged.
public struct PushLedger: Sendable {
    let pool: DatabasePool

    /// Applies `limit` to a push of `handler` arriving at `now`, in one transaction: within the
    /// limit it is counted and kept as the handler's pending push, due now and owned by `owner`
    /// (the daemon instance that runs it at once), superseding any deferred one; over it, it is
    /// coalesced into the pending push (its data replaces the older data), due when the window
    /// next has room. Either way the push is on disk before the caller answers it.
    public func admit(of handler: String, data: String?, at now: Date, limit: PushLimit,
                      owner: String) throws -> PushAdmission {
        try pool.write { db in
            let previous = try Self.pendingPush(of: handler, in: db)
            // `received_at` tells a pending push from the one that replaced it (`finish`), to
            // the millisecond it is stored with: two pushes within one get distinct times.
            let received = previous.map { max(now, $0.receivedAt.addingTimeInterval(0.001)) } ?? now
            if let earliest = try Self.nextRoom(of: handler, at: now, limit: limit, in: db) {
                let pending = PendingPush(handler: handler, dueAt: earliest, data: data, receivedAt: received,
                                          pushes: (previous?.owner == nil ? previous?.pushes ?? 0 : 0) + 1)
                try Self.save(pending, in: db)
                return .deferred(pending)
            }
            try Self.count(handler, at: now, in: db)
            let immediate = PendingPush(handler: handler, dueAt: now, data: data, receivedAt: received, pushes: 1, owner: owner)
            try Self.save(immediate, in: db)
            return .now(immediate)
        }
    }

    /// The pending push of `handler` if it is due at `now` (within `tolerance` seconds), counted
    /// as a push fetch (unless it was counted when admitted: an owned one); or moved later when
    /// the limit has no room. Nil when none is due.
    public func takeDue(of handler: String, at now: Date, limit: PushLimit, tolerance: Double = 0.1) throws -> DuePush? {
        try pool.write { db in
            guard var pending = try Self.pendingPush(of: handler, in: db),
                  pending.dueAt <= now.addingTimeInterval(tolerance) else { return nil }
            if pending.owner != nil { return .run(pending) }
            if let earliest = try Self.nextRoom(of: handler, at: now, limit: limit, in: db), earliest > pending.dueAt {
                pending.dueAt = earliest
                try Self.save(pending, in: db)
                return .rescheduled(pending)
            }
            try Self.count(handler, at: now, in: db)
            return .run(pending)
        }
    }

    /// Removes `push` once its fetch is recorded, unless a newer push has replaced it meanwhile.
    public func finish(_ push: PendingPush) throws {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM push_pending WHERE handler = ? AND received_at = ?",
                           arguments: [push.handler, StoredDate.text(push.receivedAt)])
        }
    }

    /// Every pending push, earliest due first.
    public func pending() throws -> [PendingPush] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM push_pending ORDER BY due_at, handler").map(Self.pendingPush(from:))
        }
    }

    /// When the push fetches of `handler` since `date` were counted, oldest first.
    public func times(of handler: String, since date: Date) throws -> [Date] {
        try pool.read { db in
            try StoredDate.fetchAll(db, "at", sql: "SELECT at FROM push_event WHERE handler = ? AND at >= ? ORDER BY at",
                                    arguments: [handler, StoredDate.text(date)])
        }
    }

    /// Nil when `limit` has room for one more push fetch at `now`; else the earliest time it has:
    /// when the oldest push that keeps the window full leaves it.
    private static func nextRoom(of handler: String, at now: Date, limit: PushLimit, in db: Database) throws -> Date? {
        let windowStart = now.addingTimeInterval(-limit.windowSeconds)
        let times = try StoredDate.fetchAll(db, "at", sql: "SELECT at FROM push_event WHERE handler = ? AND at > ? ORDER BY at",
                                            arguments: [handler, StoredDate.text(windowStart)])
        guard times.count >= limit.count else { return nil }
        return times[times.count - limit.count].addingTimeInterval(limit.windowSeconds)
    }

    /// Counts a push fetch of `handler` at `now`, forgetting those older than the longest window.
    private static func count(_ handler: String, at now: Date, in db: Database) throws {
        try db.execute(sql: "INSERT INTO push_event (handler, at) VALUES (?, ?)", arguments: [handler, StoredDate.text(now)])
        try db.execute(sql: "DELETE FROM push_event WHERE handler = ? AND at < ?",
                       arguments: [handler, StoredDate.text(now.addingTimeInterval(-PushLimit.maxWindowSeconds))])
    }

    private static func save(_ pending: PendingPush, in db: Database) throws {
        try db.execute(sql: """
            INSERT INTO push_pending (handler, due_at, data, received_at, pushes, owner) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(handler) DO UPDATE SET due_at = excluded.due_at, data = excluded.data,
                received_at = excluded.received_at, pushes = excluded.pushes, owner = excluded.owner
            """, arguments: [pending.handler, StoredDate.text(pending.dueAt), pending.data, StoredDate.text(pending.receivedAt), pending.pushes,
                            pending.owner])
    }

    private static func pendingPush(of handler: String, in db: Database) throws -> PendingPush? {
        try Row.fetchOne(db, sql: "SELECT * FROM push_pending WHERE handler = ?", arguments: [handler]).map(pendingPush(from:))
    }

    private static func pendingPush(from row: Row) throws -> PendingPush {
        PendingPush(handler: row["handler"], dueAt: try StoredDate.date(in: row, "due_at"), data: row["data"],
                    receivedAt: try StoredDate.date(in: row, "received_at"),
                    pushes: row["pushes"], owner: row["owner"])
    }
}

extension StateStore {
    /// The push rate limit's counts and pending pushes.
    public var pushes: PushLedger { PushLedger(pool: pool) }
}
