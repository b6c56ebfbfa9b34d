import FetchdCore
import Foundation
import GRDB

/// A handler's failure streak that has been alerted on (`alert_streak`): kept until the
/// handler next succeeds, so a restart in the middle of a streak neither alerts again nor
/// forgets the recovery it owes.
public struct AlertStreak: Sendable, Equatable {
    /// The handler.
    public var handler: String
    /// When the failing alert was raised.
    public var alertedAt: Date
    /// The handler's last success before the streak (nil: it never succeeded).
    public var lastSuccessAt: Date?
    /// Whether the alert program ran for it (then the recovery runs it too).
    public var programRan: Bool

    /// Creates a streak record.
    public init(handler: String, alertedAt: Date, lastSuccessAt: Date?, programRan: Bool) {
        self.handler = handler
        self.alertedAt = alertedAt
        self.lastSuccessAt = lastSuccessAt
        self.programRan = programRan
    }
}

/// The failure alerts' two tables in the state database: the streaks alerted on
/// (`alert_streak`) and when alert programs ran (`alert_run`, the rate limit's count). Plain
/// storage: the rules are the daemon's (`FailureAlerts`).
public struct AlertTables: Sendable {
    /// The state database's pool.
    let pool: DatabasePool

    /// Every streak alerted on and not yet recovered, by handler.
    public func streaks() throws -> [String: AlertStreak] {
        try pool.read { db in
            var streaks: [String: AlertStreak] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT * FROM alert_streak") {
                let handler: String = row["handler"]
                let lastSuccess: DatabaseValue = row["last_success_at"]
                streaks[handler] = AlertStreak(
                    handler: handler, alertedAt: try StoredDate.date(in: row, "alerted_at"),
                    lastSuccessAt: StoredDate.date(from: lastSuccess), programRan: row["program_ran"])
            }
            return streaks
        }
    }

    /// When alert programs ran since `date`, with their handlers, oldest first.
    public func runs(since date: Date) throws -> [(handler: String, at: Date)] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT handler, at FROM alert_run WHERE at >= ? ORDER BY at",
                             arguments: [StoredDate.text(date)]).map { row in
                (handler: row["handler"], at: try StoredDate.date(in: row, "at"))
            }
        }
    }

    /// Keeps `streak`, and when its program ran, counts that run, forgetting runs before
    /// `forgetBefore`: one transaction.
    public func begin(_ streak: AlertStreak, forgettingRunsBefore forgetBefore: Date) throws {
        try pool.write { db in
            try db.execute(sql: """
                INSERT INTO alert_streak (handler, alerted_at, last_success_at, program_ran) VALUES (?, ?, ?, ?)
                ON CONFLICT(handler) DO UPDATE SET alerted_at = excluded.alerted_at,
                    last_success_at = excluded.last_success_at, program_ran = excluded.program_ran
                """, arguments: [streak.handler, StoredDate.text(streak.alertedAt),
                                 streak.lastSuccessAt.map(StoredDate.text), streak.programRan])
            if streak.programRan {
                try db.execute(sql: "INSERT INTO alert_run (handler, at) VALUES (?, ?)",
                               arguments: [streak.handler, StoredDate.text(streak.alertedAt)])
            }
            try db.execute(sql: "DELETE FROM alert_run WHERE at < ?", arguments: [StoredDate.text(forgetBefore)])
        }
    }

    /// Forgets `handler`'s streak: it recovered.
    public func end(_ handler: String) throws {
        try pool.write { db in try db.execute(sql: "DELETE FROM alert_streak WHERE handler = ?", arguments: [handler]) }
    }

    /// Adds the tables to the schema.
    static func registerMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v8: failure alerts") { db in
            try db.create(table: "alert_streak") { t in
                t.primaryKey("handler", .text)
                t.column("alerted_at", .datetime).notNull()
                t.column("last_success_at", .datetime)
                t.column("program_ran", .boolean).notNull()
            }
            try db.create(table: "alert_run") { t in
                t.column("handler", .text).notNull()
                t.column("at", .datetime).notNull()
            }
            try db.create(index: "alert_run_by_time", on: "alert_run", columns: ["at"])
        }
    }
}

extension StateStore {
    /// The failure alerts' tables.
    public var alerts: AlertTables { AlertTables(pool: pool) }

    /// How many failures of `fetch`'s handler came in a row just before it (the streak a success
    /// ended), counted in its history, at most `limit`; before its newest result when `fetch`
    /// has no id (it was not recorded).
    public func failures(before fetch: CompletedFetch, limit: Int = Defaults.historyKeepPerHandler) throws -> Int {
        let results = try pool.read { db in
            try String.fetchAll(db, sql: """
                SELECT result FROM fetch_history WHERE handler = ? AND id < ? ORDER BY id DESC LIMIT ?
                """, arguments: [fetch.handler, fetch.id ?? Int64.max, limit])
        }
        // Without an id the newest row is not this fetch: all of them came before it.
        return results.prefix { FetchResult(name: $0, reason: nil)?.isFailure ?? false }.count
    }
}
