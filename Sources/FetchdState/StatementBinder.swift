import GRDB
import GRDBSQLite

/// Binds a cached statement's parameters straight through SQLite's C API: the three statements
/// each fetch's result runs (`StateStore.record`). GRDB's `execute(arguments:)` builds a
/// `StatementArguments` array of `DatabaseValue`s for every run, about a tenth of recording a
/// result; these statements take a handful of texts and integers, always the same. GRDB still
/// runs the statement (`Statement.run(binding:)`), so its bookkeeping of transactions and of a
/// failed statement is the same as for any other.
struct StatementBinder {
    /// The statement being bound.
    let statement: SQLiteStatement

    /// SQLite copies the text: the Swift string's bytes are borrowed for the call only.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    /// Binds parameter `index` (1-based) to `value`, or NULL.
    func text(_ index: CInt, _ value: String?) throws {
        guard let value else { return try null(index) }
        try check(sqlite3_bind_text(statement, index, value, CInt(value.utf8.count), Self.transient), index)
    }

    /// Binds parameter `index` (1-based) to `value`, or NULL.
    func integer(_ index: CInt, _ value: Int?) throws {
        guard let value else { return try null(index) }
        try check(sqlite3_bind_int64(statement, index, Int64(value)), index)
    }

    private func null(_ index: CInt) throws { try check(sqlite3_bind_null(statement, index), index) }

    /// A parameter the statement does not have (its SQL changed) is an error, as GRDB makes it.
    private func check(_ code: CInt, _ index: CInt) throws {
        guard code != SQLITE_OK else { return }
        throw DatabaseError(resultCode: ResultCode(rawValue: code),
                            message: "cannot bind parameter \(index) of \(sqlite3_bind_parameter_count(statement))")
    }
}

extension Statement {
    /// Marks this statement's parameters as the caller's to bind (`run(binding:)`), once after
    /// it is taken from the cache: GRDB then runs it without arguments of its own.
    func bindsThroughC() {
        setUncheckedArguments(StatementArguments())
    }

    /// Runs this statement to its end with the parameters `bind` sets (the rest NULL), through
    /// GRDB's `execute()`: its errors, its statement cache and its view of the transaction stay
    /// as they are for any statement. Needs `bindsThroughC()` first.
    func run(binding bind: (StatementBinder) throws -> Void) throws {
        // Stepped to its end last time: its bindings may change only after a reset.
        sqlite3_reset(sqliteStatement)
        sqlite3_clear_bindings(sqliteStatement)
        try bind(StatementBinder(statement: sqliteStatement))
        try execute()
    }
}
