import FetchdCore
import Foundation
import GRDB

/// The durable record of every handler's state and every fetch: one SQLite database in WAL
/// mode, changed only in transactions, so a crash or SIGKILL never loses a recorded result.
public final class StateStore: Sendable {
    let pool: DatabasePool
    /// The database file.
    public let path: String
    /// Every handler's state as last read (`allStates`).
    let statesMemo = StatesMemo()

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    public init(path: String) throws {
        self.path = path
        Self.keepPrivate(path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        pool = try DatabasePool(path: path, configuration: configuration)
        // Synchronous=FULL: the WAL is synced at every commit, so a result acknowledged survives
        // a power loss. Set on the writer once the pool is open: the pool turns WAL mode on
        // after `prepareDatabase` has run and sets NORMAL with it (synced at checkpoints only).
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        try Self.migrator.migrate(pool)
    }

    /// What `close` could not do. Nothing recorded is lost either way: SQLite reads the WAL
    /// again at the next open.
    public struct CloseProblem: Error, CustomStringConvertible {
        /// What went wrong, in words.
        public let description: String
    }

    /// Checkpoints the WAL into the database file, empties it, and closes the database, on the
    /// caller, so that it is done before the process exits: the pool's deinitializer would run
    /// the closing checkpoint on whichever thread lets go of the store last, where `exit` on
    /// another thread can cut it short and leave the next start a log to replay. Any use after
    /// this throws `SQLITE_MISUSE`.
    public func close() throws(CloseProblem) {
        // Explicitly: `DatabasePool.close` shuts the writer first, and the read-only readers that
        // close after it cannot checkpoint. Another process reading the database (`fetchctl
        // simulate --from-state`, `sqlite3`) makes it wait up to the busy timeout, then fail:
        // the database is closed all the same.
        var unflushed: (any Error)?
        do { _ = try pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) } } catch { unflushed = error }
        do { try pool.close() } catch {
            throw CloseProblem(description: "it did not close (\(error)); the next start reads its log again")
        }
        if let unflushed {
            throw CloseProblem(description: "its log was not emptied (\(unflushed)); the next start reads it again")
        }
    }

    /// Records a finished fetch and updates the handler's state in one transaction: its
    /// validators when it brought some, its server floor (`notBefore`, nil clears it). Returns
    /// it as stored (with its id).
    @discardableResult
    public func record(_ fetch: CompletedFetch, historyLimit: Int = Defaults.historyKeepPerHandler) throws -> CompletedFetch {
        try record([fetch], historyLimit: historyLimit)[0]
    }

    /// Records a batch of finished fetches in one transaction (one fsync for a whole wake).
    /// Returns them as stored (with their ids), in order.
    public func record(_ batch: [CompletedFetch], historyLimit: Int = Defaults.historyKeepPerHandler) throws -> [CompletedFetch] {
        defer { statesMemo.invalidate() }
        return try pool.write { db in
            // The three statements are looked up once per batch: each lookup hashes its SQL text,
            // three times per result when it was done for every insert.
            let statements = try InsertStatements(db)
            var lastID = try Int64.fetchOne(statements.lastID) ?? 0
            let stored = try batch.map { fetch in
                lastID += 1
                return try Self.insert(fetch, id: lastID, historyLimit: historyLimit, with: statements)
            }
            try statements.setLastID.execute(arguments: [lastID])
            return stored
        }
    }

    /// The cached statements that record one result.
    private struct InsertStatements {
        let lastID: Statement
        let setLastID: Statement
        let history: Statement
        let state: Statement
        let trim: Statement

        init(_ db: Database) throws {
            lastID = try db.cachedStatement(sql: "SELECT last_id FROM fetch_history_sequence")
            setLastID = try db.cachedStatement(sql: "UPDATE fetch_history_sequence SET last_id = ?")
            history = try db.cachedStatement(sql: """
                INSERT INTO fetch_history (handler, id, started_at, finished_at, duration_ms, result, reason,
                                           trigger, bytes, sha256, version)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            // New row or old, the same rules: failures count up and a success resets them; the last
            // success is kept through failures; validators change only when the fetch brought some.
            // Numbered parameters (?6 and ?11 are used twice) and positional arguments: a dictionary
            // of named ones was built and hashed for every result.
            state = try db.cachedStatement(sql: """
                INSERT INTO handler_state (name, last_attempt_at, last_success_at, last_result, last_reason,
                                           consecutive_failures, etag, last_modified, new_data_unseen, not_before)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                ON CONFLICT(name) DO UPDATE SET
                    last_attempt_at = excluded.last_attempt_at,
                    last_success_at = COALESCE(excluded.last_success_at, last_success_at),
                    last_result = excluded.last_result,
                    last_reason = excluded.last_reason,
                    consecutive_failures = CASE WHEN ?6 THEN consecutive_failures + 1 ELSE 0 END,
                    etag = CASE WHEN ?11 THEN excluded.etag ELSE etag END,
                    last_modified = CASE WHEN ?11 THEN excluded.last_modified ELSE last_modified END,
                    new_data_unseen = new_data_unseen + excluded.new_data_unseen,
                    not_before = excluded.not_before
                """)
            trim = try db.cachedStatement(sql: """
                DELETE FROM fetch_history WHERE handler = ? AND id <= (
                  SELECT id FROM fetch_history WHERE handler = ? ORDER BY id DESC LIMIT 1 OFFSET ?)
                """)
            [history, state, trim].forEach { $0.bindsThroughC() }
        }
    }

    /// One result: a history row, the handler's state row updated, old history trimmed.
    ///
    /// Plain cached statements rather than GRDB's record API: a wake records a thousand results
    /// in one transaction, and building each statement anew cost more than the fetch itself.
    /// Their parameters are bound through SQLite's C API (`StatementBinder`).
    private static func insert(_ fetch: CompletedFetch, id: Int64, historyLimit: Int,
                               with statements: InsertStatements) throws -> CompletedFetch {
        var fetch = fetch
        fetch.id = id
        let (started, finished) = (StoredDate.text(fetch.startedAt), StoredDate.text(fetch.finishedAt))
        let result = fetch.result
        try statements.history.run { bind in
            try bind.text(1, fetch.handler)
            try bind.integer(2, Int(id))
            try bind.text(3, started)
            try bind.text(4, finished)
            try bind.integer(5, fetch.durationMilliseconds)
            try bind.text(6, result.name)
            try bind.text(7, result.reason)
            try bind.text(8, fetch.trigger.rawValue)
            try bind.integer(9, fetch.bytes)
            try bind.text(10, fetch.sha256)
            try bind.text(11, fetch.version)
        }
        try statements.state.run { bind in
            try bind.text(1, fetch.handler)
            try bind.text(2, started)
            try bind.text(3, result.isFailure ? nil : finished)
            try bind.text(4, result.name)
            try bind.text(5, result.reason)
            try bind.integer(6, result.isFailure ? 1 : 0)
            try bind.text(7, fetch.validators?.etag)
            try bind.text(8, fetch.validators?.lastModified)
            try bind.integer(9, result == .newData ? 1 : 0)
            try bind.text(10, fetch.notBefore.map(StoredDate.text))
            try bind.integer(11, fetch.validators == nil ? 0 : 1)
        }
        try statements.trim.run { bind in
            try bind.text(1, fetch.handler)
            try bind.text(2, fetch.handler)
            try bind.integer(3, historyLimit)
        }
        return fetch
    }

    /// Whether `error` from a write is about the disk or the file (full, I/O, locked, read-only),
    /// so the same write may succeed later; not about what was written (a constraint), which
    /// would fail again every time.
    public static func isTransient(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return [.SQLITE_FULL, .SQLITE_IOERR, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_READONLY, .SQLITE_CANTOPEN]
            .contains(error.resultCode)
    }

    /// The writer's `PRAGMA synchronous` (2: FULL).
    func writerSynchronous() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// When the fetches of any of `handlers` since `date` started, oldest first (a shared budget).
    public func attempts(of handlers: [String], since date: Date) throws -> [Date] {
        guard !handlers.isEmpty else { return [] }
        let marks = Array(repeating: "?", count: handlers.count).joined(separator: ", ")
        return try pool.read { db in
            try StoredDate.fetchAll(db, "started_at",
                                    sql: "SELECT started_at FROM fetch_history WHERE started_at >= ? AND handler IN (\(marks)) ORDER BY started_at",
                                    arguments: StatementArguments([StoredDate.text(date)] + handlers))
        }
    }

    /// When the fetches of `handler` since `date` that left its content current (new data or no
    /// new data) started, oldest first: the planner's track record (`TrackRecord`).
    public func freshFetches(of handler: String, since date: Date) throws -> [Date] {
        try pool.read { db in
            try StoredDate.fetchAll(db, "started_at", sql: """
                SELECT started_at FROM fetch_history
                WHERE handler = ? AND started_at >= ? AND result IN ('newData', 'noData') ORDER BY started_at
                """, arguments: [handler, StoredDate.text(date)])
        }
    }

    /// When the newest `limit` fetches of `handler` started, oldest first (the planner's budget).
    public func recentAttempts(of handler: String, limit: Int) throws -> [Date] {
        try pool.read { db in
            try StoredDate.fetchAll(db, "started_at", sql: "SELECT started_at FROM fetch_history WHERE handler = ? ORDER BY id DESC LIMIT ?",
                                    arguments: [handler, limit]).reversed()
        }
    }

    /// The state of one handler, or nil if it has never been fetched.
    public func state(of handler: String) throws -> HandlerState? {
        try pool.read { db in try HandlerState.fetchOne(db, key: handler) }
    }

    /// The state of every handler ever fetched, by name; read from the database only after a
    /// write changed them (this store is the database's only writer).
    public func allStates() throws -> [String: HandlerState] {
        try statesMemo.states {
            try pool.read { db in
                Dictionary(uniqueKeysWithValues: try HandlerState.fetchAll(db).map { ($0.name, $0) })
            }
        }
    }

    /// How many times `allStates` read the database (a wake reads it once).
    public var stateReads: Int { statesMemo.reads }

    /// The newest `limit` fetches of `handler`, newest first.
    public func history(of handler: String, limit: Int = Defaults.historyLimit) throws -> [CompletedFetch] {
        try pool.read { db in
            try FetchRecord.filter(Column("handler") == handler).order(Column("id").desc).limit(limit).fetchAll(db)
                .map(\.completed)
        }
    }

    /// Resets the new-data counters: someone has looked.
    public func markSeen() throws {
        defer { statesMemo.invalidate() }
        try pool.write { db in try db.execute(sql: "UPDATE handler_state SET new_data_unseen = 0") }
    }

    /// Runs SQLite's integrity check; true when the database is sound.
    public func integrityCheck() throws -> Bool {
        try pool.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok" }
    }
}
