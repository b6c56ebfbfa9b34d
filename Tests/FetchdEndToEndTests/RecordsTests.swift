import FetchdTestSupport
import Foundation
import Testing

/// The records stay readable: bench/README.md opens with today's figures (one table, with the
/// command of each bench, in its first 40 lines), and no line of docs/reliability.md is too
/// long to read (a table whose cells outgrew it is split into sections).
struct RecordsTests {
    private static func text(_ path: String) throws -> String {
        try String(contentsOfFile: TestBinaries.sourceTree + "/" + path, encoding: .utf8)
    }

    @Test func benchREADMEOpensWithTodaysFigures() throws {
        let head = try Self.text("bench/README.md").split(separator: "\n", omittingEmptySubsequences: false).prefix(40)
        #expect(head.contains("## Today's figures"), "bench/README.md: no \"## Today's figures\" in its first 40 lines")
        let rows = head.filter { $0.hasPrefix("| ") && $0.contains("`make bench-") }
        #expect(rows.count >= 7, "bench/README.md: \(rows.count) bench rows with their command in the first 40 lines")
    }

    @Test func noLineOfTheReliabilityNotesIsOver400Characters() throws {
        for (number, line) in try Self.text("docs/reliability.md").split(separator: "\n").enumerated() where line.count > 400 {
            Issue.record("docs/reliability.md:\(number + 1) is \(line.count) characters")
        }
    }
}
