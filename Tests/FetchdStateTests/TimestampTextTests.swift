import FetchdCore
@testable import FetchdState
import Foundation
import GRDB
import Testing

/// Timestamps as the state database stores them (GRDB's text format, UTC), written by hand for
/// speed: to the nearest millisecond, carrying into the second, before 1970 and at year 1.
struct TimestampTextTests {
    @Test(arguments: [
        (1_795_163_412.345, "2026-11-20 08:30:12.345"),
        (0.9996, "1970-01-01 00:00:01.000"),
        (-0.25, "1969-12-31 23:59:59.750"),
        (-62_135_596_800, "0001-01-01 00:00:00.000"),
    ])
    func utcToTheMillisecond(seconds: Double, expected: String) {
        #expect(StoredDate.text(Date(timeIntervalSince1970: seconds)) == expected)
    }

    /// Read back to the same millisecond, and written again as the same text.
    @Test(arguments: ["2026-11-20 08:30:12.345", "1970-01-01 00:00:01.000", "1969-12-31 23:59:59.750",
                      "0001-01-01 00:00:00.000", "2024-02-29 23:59:59.999"])
    func readsWhatItWrites(text: String) throws {
        let date = try #require(StoredDate.date(from: text.databaseValue))
        #expect(StoredDate.text(date) == text)
    }

    /// Shapes fetchd does not write but GRDB does read are read as GRDB reads them; text that is
    /// no time is not a date.
    @Test func otherShapesAsGRDBReadsThem() {
        for value in ["2026-11-20 08:30", "2026-11-20T08:30:12", "2026-11-20"].map(\.databaseValue)
            + [(1_795_163_412.5).databaseValue, (1_795_163_412).databaseValue] {
            #expect(StoredDate.date(from: value) == Date.fromDatabaseValue(value), "\(value)")
            #expect(StoredDate.date(from: value) != nil, "\(value)")
        }
        for text in ["2026-02-30 08:30:12.000", "2026-11-20 08:30:12.", "2026-11-20 24:00:00.000", "yesterday", ""] {
            #expect(StoredDate.date(from: text.databaseValue) == Date.fromDatabaseValue(text.databaseValue), "\(text)")
        }
        #expect(StoredDate.date(from: .null) == nil)
        #expect(StoredDate.date(from: "yesterday".databaseValue) == nil)
    }

    /// GRDB reads back what it is given (the rows' times come back as they were recorded).
    @Test func grdbParsesIt() throws {
        let directory = try FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask,
                                                    appropriateFor: URL(fileURLWithPath: "/tmp"), create: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try StateStore(path: directory.path + "/state.sqlite")
        let start = Date(timeIntervalSince1970: 1_795_163_412.345)
        let record = CompletedFetch(handler: "h", trigger: .timer, startedAt: start, finishedAt: start.addingTimeInterval(1),
                                    result: .noData)
        _ = try store.record(record)
        let read = try #require(try store.history(of: "h", limit: 1).first)
        #expect(abs(read.startedAt.timeIntervalSince(start)) < 0.001)
    }
}
