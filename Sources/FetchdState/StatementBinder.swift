import GRDB
import GRDBSQLite

/// Binds a cached statement's parameters straight through SQLite's C API and runs it: the three
/// statements each fetch's result runs (`StateStore.record`). GRDB's `execute(arguments:)`
/// builds a `StatementArguments` array of `DatabaseValue`s for every run, about a tenth of
/// recording a result; these statements take a handful of texts and integers, always the same.
/// Only for statements no other code runs through GRDB (GRDB does not see these bindings).
struct StatementBinder {
    /// The statement being bound.
    let statement: SQLiteStatement

    /// SQLite copies the text: the Swift string's bytes are borrowed for the call only.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    /// Binds parameter `index` (1-based) to `value`, or NULL.
    func text(_ index: CInt, _ value: String?) {
        guard let value else { return null(index) }
        _ = sqlite3_bind_text(statement, index, value, -1, Self.transient)
    }

    /// Binds parameter `index` (1-based) to `value`, or NULL.
    func integer(_ index: CInt, _ value: Int?) {
        guard let value else { return null(index) }
        _ = sqlite3_bind_int64(statement, index, Int64(value))
    }

    private func null(_ index: CInt) { _ = sqlite3_bind_null(statement, index) }
}

extension Statement {
    /// Runs this statement to its end with the parameters `bind` sets (the rest NULL). Throws the
    /// `DatabaseError` GRDB would (its extended result code: a full disk stays `SQLITE_FULL`).
    func run(in db: Database, binding bind: (StatementBinder) -> Void) throws {
        sqlite3_reset(sqliteStatement)
        sqlite3_clear_bindings(sqliteStatement)
        bind(StatementBinder(statement: sqliteStatement))
        var code: CInt
        repeat { code = sqlite3_step(sqliteStatement) } while code == SQLITE_ROW
        guard code == SQLITE_DONE else {
            let message = db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }
            sqlite3_reset(sqliteStatement)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
    }
}
