import FetchdCore
import Foundation
import GRDB

/// The durable record of every handler's state and every fetch: one SQLite database in WAL
/// mode, changed only in transactions, so a crash or SIGKILL never loses a recorded result.
public final class StateStore: Sendable {
    private let pool: DatabasePool
    /// The database file.
    public let path: String

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    public init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        // Synchronous=FULL: a transaction acknowledged to a client survives power loss too.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
    }

    /// Schema history. Never edit a shipped migration: add a new one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: state, history, usage") { db in
            try db.create(table: HandlerState.databaseTableName) { t in
                t.primaryKey("name", .text)
                t.column("last_attempt_at", .datetime)
                t.column("last_success_at", .datetime)
                t.column("last_result", .text)
                t.column("last_reason", .text)
                t.column("consecutive_failures", .integer).notNull().defaults(to: 0)
                t.column("etag", .text)
                t.column("last_modified", .text)
                t.column("new_data_unseen", .integer).notNull().defaults(to: 0)
            }
            try db.create(table: FetchRecord.databaseTableName) { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("handler", .text).notNull()
                t.column("started_at", .datetime).notNull()
                t.column("finished_at", .datetime).notNull()
                t.column("duration_ms", .integer).notNull()
                t.column("result", .text).notNull()
                t.column("reason", .text)
                t.column("trigger", .text).notNull()
                t.column("bytes", .integer)
                t.column("sha256", .text)
                t.column("version", .text)
            }
            try db.create(index: "fetch_history_by_handler", on: FetchRecord.databaseTableName, columns: ["handler", "id"])
            // Usage events: when someone used a handler's content (filled by the usage-learning work).
            try db.create(table: "usage_event") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("handler", .text).notNull()
                t.column("at", .datetime).notNull()
                t.column("utc_offset_seconds", .integer).notNull()
                t.column("source", .text).notNull()
            }
            try db.create(index: "usage_event_by_handler", on: "usage_event", columns: ["handler", "at"])
        }
        migrator.registerMigration("v2: server hints") { db in
            try db.alter(table: HandlerState.databaseTableName) { t in t.add(column: "not_before", .datetime) }
        }
        return migrator
    }

    /// Records a finished fetch and updates the handler's state in one transaction.
    /// Returns the stored record (with its id).
    @discardableResult
    /// `notBefore` replaces the stored server hint (nil clears it).
    public func record(_ fetch: FetchRecord, validators: (etag: String?, lastModified: String?)? = nil,
                       notBefore: Date? = nil,
                       historyLimit: Int = Defaults.historyKeepPerHandler) throws -> FetchRecord {
        try pool.write { db in
            var fetch = fetch
            try fetch.insert(db)
            var state = try HandlerState.fetchOne(db, key: fetch.handler) ?? HandlerState(name: fetch.handler)
            state.lastAttemptAt = fetch.startedAt
            state.lastResult = fetch.result
            state.lastReason = fetch.reason
            if fetch.fetchResult?.isFailure ?? true {
                state.consecutiveFailures += 1
            } else {
                state.consecutiveFailures = 0
                state.lastSuccessAt = fetch.finishedAt
            }
            if fetch.result == FetchResult.newData.name { state.newDataUnseen += 1 }
            state.notBefore = notBefore
            if let validators {
                state.etag = validators.etag
                state.lastModified = validators.lastModified
            }
            try state.save(db)
            try db.execute(
                sql: """
                    DELETE FROM fetch_history WHERE handler = ? AND id <= (
                      SELECT id FROM fetch_history WHERE handler = ? ORDER BY id DESC LIMIT 1 OFFSET ?)
                    """,
                arguments: [fetch.handler, fetch.handler, historyLimit])
            return fetch
        }
    }

    /// The state of one handler, or nil if it has never been fetched.
    public func state(of handler: String) throws -> HandlerState? {
        try pool.read { db in try HandlerState.fetchOne(db, key: handler) }
    }

    /// The state of every handler ever fetched, by name.
    public func allStates() throws -> [String: HandlerState] {
        try pool.read { db in
            Dictionary(uniqueKeysWithValues: try HandlerState.fetchAll(db).map { ($0.name, $0) })
        }
    }

    /// The newest `limit` fetches of `handler`, newest first.
    public func history(of handler: String, limit: Int = Defaults.historyLimit) throws -> [FetchRecord] {
        try pool.read { db in
            try FetchRecord.filter(Column("handler") == handler).order(Column("id").desc).limit(limit).fetchAll(db)
        }
    }

    /// Resets the new-data counters: someone has looked.
    public func markSeen() throws {
        try pool.write { db in try db.execute(sql: "UPDATE handler_state SET new_data_unseen = 0") }
    }

    /// Runs SQLite's integrity check; true when the database is sound.
    public func integrityCheck() throws -> Bool {
        try pool.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok" }
    }
}
