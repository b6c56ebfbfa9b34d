import FetchdCore
import Foundation
import GRDB

extension StateStore {
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
        migrator.registerMigration("v3: history by start time") { db in
            // global_budget counts the fetches of the last 24 hours on every wake.
            try db.create(index: "fetch_history_by_start", on: FetchRecord.databaseTableName, columns: ["started_at"])
        }
        registerPushMigration(&migrator)
        registerClusteredHistoryMigration(&migrator)
        migrator.registerMigration("v7: handlers registered over D-Bus") { db in
            try db.create(table: "registered_handler") { t in
                t.column("uid", .integer).notNull()
                t.column("name", .text).notNull()
                t.column("options", .text).notNull()
                t.column("registered_at", .datetime).notNull()
                t.primaryKey(["uid", "name"])
            }
        }
        AlertTables.registerMigration(&migrator)
        return migrator
    }

    /// The history table keyed by (handler, id), without a rowid, so that each handler's rows
    /// share pages with each other only.
    ///
    /// In rowid order the rows of all handlers interleave by time: trimming a handler's oldest
    /// row leaves a hole in a page that other handlers' rows keep alive, and a handler fetched
    /// once a day pins a page per row for as long as it keeps its 1,000, so the file's size
    /// follows the spread of the handlers' rates rather than the rows kept. Clustered by
    /// handler, trimming frees the front of the handler's own run of pages and inserting fills
    /// its end, so the file's size follows the rows kept. The ids stay unique across handlers,
    /// handed out from `fetch_history_sequence` (a table without rowid cannot autoincrement).
    private static func registerClusteredHistoryMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v6: history clustered by handler") { db in
            let lastID = try Int64.fetchOne(db, sql: """
                SELECT max(coalesce((SELECT max(id) FROM fetch_history), 0),
                           coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'fetch_history'), 0))
                """) ?? 0
            try db.execute(sql: """
                CREATE TABLE fetch_history_clustered (
                    handler TEXT NOT NULL,
                    id INTEGER NOT NULL,
                    started_at DATETIME NOT NULL,
                    finished_at DATETIME NOT NULL,
                    duration_ms INTEGER NOT NULL,
                    result TEXT NOT NULL,
                    reason TEXT,
                    "trigger" TEXT NOT NULL,
                    bytes INTEGER,
                    sha256 TEXT,
                    version TEXT,
                    PRIMARY KEY (handler, id)
                ) WITHOUT ROWID;
                INSERT INTO fetch_history_clustered
                    SELECT handler, id, started_at, finished_at, duration_ms, result, reason, "trigger",
                           bytes, sha256, version
                    FROM fetch_history ORDER BY handler, id;
                DROP TABLE fetch_history;
                ALTER TABLE fetch_history_clustered RENAME TO fetch_history;
                CREATE INDEX fetch_history_by_start ON fetch_history (handler, started_at);
                CREATE TABLE fetch_history_sequence (last_id INTEGER NOT NULL);
                """)
            try db.execute(sql: "INSERT INTO fetch_history_sequence (last_id) VALUES (?)", arguments: [lastID])
        }
    }

    /// Push times and the pending push of each handler, so that a restart forgets neither the
    /// rate limit's count nor a deferred push.
    static func registerPushMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v4: push wakes") { db in
            try db.create(table: "push_event") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("handler", .text).notNull()
                t.column("at", .datetime).notNull()
            }
            try db.create(index: "push_event_by_handler", on: "push_event", columns: ["handler", "at"])
            try db.create(table: "push_pending") { t in
                t.primaryKey("handler", .text)
                t.column("due_at", .datetime).notNull()
                t.column("data", .text)
                t.column("received_at", .datetime).notNull()
                t.column("pushes", .integer).notNull()
            }
        }
        migrator.registerMigration("v5: durable immediate pushes") { db in
            try db.alter(table: "push_pending") { t in t.add(column: "owner", .text) }
        }
    }
}
