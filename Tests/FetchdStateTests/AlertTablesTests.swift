import FetchdCore
import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// The failure alerts' tables: a streak alerted on survives a reopen until it ends, runs are
/// counted only when the program ran and forgotten past the window, and a success's streak
/// length is counted before its own record.
@Suite struct AlertTablesTests {
    @Test func streaksAndRunsSurviveAReopen() throws {
        let folder = try TemporaryDirectory("state-alerts")
        let path = folder.file("state.sqlite")
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        do {
            let store = try StateStore(path: path)
            try store.alerts.begin(AlertStreak(handler: "old", alertedAt: now.addingTimeInterval(-7200), lastSuccessAt: nil,
                                               programRan: true), forgettingRunsBefore: .distantPast)
            try store.alerts.begin(AlertStreak(handler: "a", alertedAt: now, lastSuccessAt: now.addingTimeInterval(-60),
                                               programRan: true), forgettingRunsBefore: now.addingTimeInterval(-3600))
            try store.alerts.begin(AlertStreak(handler: "b", alertedAt: now, lastSuccessAt: nil, programRan: false),
                                   forgettingRunsBefore: now.addingTimeInterval(-3600))
            try store.close()
        }
        let store = try StateStore(path: path)
        let streaks = try store.alerts.streaks()
        #expect(Set(streaks.keys) == ["old", "a", "b"])
        #expect(streaks["a"]?.lastSuccessAt == now.addingTimeInterval(-60) && streaks["a"]?.programRan == true)
        #expect(streaks["b"]?.lastSuccessAt == nil && streaks["b"]?.programRan == false)
        let runs = try store.alerts.runs(since: .distantPast)
        #expect(runs.map(\.handler) == ["a"], "old's run was forgotten past the window, b's program did not run")
        try store.alerts.end("a")
        #expect(try store.alerts.streaks()["a"] == nil)
    }

    @Test func theFailuresBeforeASuccessAreCountedUpToIt() throws {
        let folder = try TemporaryDirectory("state-alerts")
        let store = try StateStore(path: folder.file("state.sqlite"))
        func record(_ result: FetchResult) throws -> CompletedFetch {
            try store.record(CompletedFetch(handler: "h", trigger: .timer, startedAt: .now, finishedAt: .now, result: result))
        }
        _ = try record(.newData)
        for _ in 0..<4 { _ = try record(.failed(reason: "x")) }
        _ = try record(.expired)
        let success = try record(.noData)
        _ = try record(.failed(reason: "a later one"))
        #expect(try store.failures(before: success) == 5)
        #expect(try store.state(of: "h")?.consecutiveFailures == 1)
    }
}
