import Foundation
import GRDB

/// One row of `registered_handler`: a handler an application registered over D-Bus, as stored.
/// What the options mean is FetchdConfig's `Registration` to say; this module only keeps them.
public struct StoredRegistration: Sendable, Equatable {
    /// `uid`: who registered it.
    public var uid: UInt32
    /// `name`: the application's name for it.
    public var name: String
    /// `options`: the options as the daemon encoded them (JSON).
    public var options: String
    /// `registered_at`.
    public var registeredAt: Date

    /// A row.
    public init(uid: UInt32, name: String, options: String, registeredAt: Date) {
        self.uid = uid
        self.name = name
        self.options = options
        self.registeredAt = registeredAt
    }
}

/// The handlers applications registered over D-Bus (`registered_handler`), kept across
/// restarts. Each write is durable when it returns, so a registration answered is never lost.
public struct RegistrationTable: Sendable {
    let pool: DatabasePool

    /// Every registration, by uid then name.
    public func all() throws -> [StoredRegistration] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM registered_handler ORDER BY uid, name").map { row in
                StoredRegistration(uid: UInt32(truncatingIfNeeded: row["uid"] as Int64), name: row["name"],
                                   options: row["options"], registeredAt: try StoredDate.date(in: row, "registered_at"))
            }
        }
    }

    /// Keeps `registration`, replacing the same uid's registration of that name. Fails when the
    /// uid would then have more than `limit` registrations (`LimitReached`).
    public func save(_ registration: StoredRegistration, limit: Int) throws {
        try pool.write { db in
            let others = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM registered_handler WHERE uid = ? AND name != ?",
                                          arguments: [Int64(registration.uid), registration.name]) ?? 0
            guard others < limit else { throw LimitReached(limit: limit) }
            try db.execute(sql: """
                INSERT INTO registered_handler (uid, name, options, registered_at) VALUES (?, ?, ?, ?)
                ON CONFLICT(uid, name) DO UPDATE SET options = excluded.options, registered_at = excluded.registered_at
                """, arguments: [Int64(registration.uid), registration.name, registration.options,
                                 StoredDate.text(registration.registeredAt)])
        }
    }

    /// Forgets `uid`'s registration `name`. Returns whether there was one.
    @discardableResult
    public func remove(uid: UInt32, name: String) throws -> Bool {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM registered_handler WHERE uid = ? AND name = ?", arguments: [Int64(uid), name])
            return db.changesCount > 0
        }
    }

    /// A uid already has as many registrations as it may.
    public struct LimitReached: Error, Sendable, Equatable {
        /// The most a uid may have.
        public let limit: Int
    }
}

extension StateStore {
    /// The handlers applications registered over D-Bus.
    public var registrations: RegistrationTable { RegistrationTable(pool: pool) }
}
