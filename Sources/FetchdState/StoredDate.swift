import FetchdCore
import Foundation
import GRDB

/// The state database's times: text in GRDB's format (`2026-11-21 08:30:12.345`, UTC), written
/// and read here without Foundation's formatters. GRDB's own DateFormatter and Calendar go
/// through ICU: a visible share of recording a wake's results, and ICU's code and tables then
/// stayed resident in an idle daemon (4 MB) for the handler states read at each wake.
enum StoredDate {
    /// A date as stored, to the nearest millisecond.
    static func text(_ date: Date) -> String {
        var text = DigitText(capacity: 23)
        text.appendUTC(secondsSince1970: date.timeIntervalSince1970, separator: " ")
        return text.text
    }

    /// A stored date: the text `text(_:)` writes, read here; any other value (a number, a
    /// shorter text GRDB also accepts) as GRDB reads it. Nil when neither can.
    @Sendable static func date(from value: DatabaseValue) -> Date? {
        if case .string(let text) = value.storage,
           let seconds = UTCTime.secondsSince1970(reading: text, separator: " ") {
            return Date(timeIntervalSince1970: seconds)
        }
        return Date.fromDatabaseValue(value)
    }

    /// The date in `row`'s `column`; throws when it holds none (NULL, or a value that is no date).
    static func date(in row: Row, _ column: String) throws -> Date {
        try required(row[column], in: column)
    }

    /// The dates a query of one column (`column`, for the error) returns, in order.
    static func fetchAll(_ db: Database, _ column: String, sql: String, arguments: StatementArguments) throws -> [Date] {
        try DatabaseValue.fetchAll(db, sql: sql, arguments: arguments).map { try required($0, in: column) }
    }

    private static func required(_ value: DatabaseValue, in column: String) throws -> Date {
        guard let date = date(from: value) else {
            throw DatabaseError(resultCode: .SQLITE_MISMATCH,
                                message: "column \(column) holds \(value), not a time as fetchd stores it (2026-11-21 08:30:12.345)")
        }
        return date
    }
}
