import FetchdCore
@testable import FetchdPlanner
import Foundation
import Testing

/// Usage traces, the model's local time, and the planner replayed on the synthetic traces
/// (copied from ../shared/traces, regenerated there by make_traces.py).
struct UsageTraceTests {
    @Test func timestampsKeepTheirOffsets() throws {
        let events = try UsageTrace.parse("""
            # a comment
            2026-03-02T09:02:48+08:00
            2026-03-29T02:30:00.500+02:00

            2026-03-01T23:00:00Z
            """)
        #expect(events.count == 3)
        #expect(events[0].date == Date(timeIntervalSince1970: 1_772_406_000))  // 2026-03-01T23:00:00Z
        #expect(events[1].utcOffsetSeconds == 8 * 3600 && events[1].localMinuteOfDay == 9 * 60 + 2)
        #expect(events[1].localWeekday == 0)  // 2 March 2026 is a Monday
        #expect(events[2].utcOffsetSeconds == 7200 && events[2].date.timeIntervalSince1970.truncatingRemainder(dividingBy: 1) == 0.5)
        #expect(UsageTrace.format(events[1].date, offsetSeconds: 8 * 3600) == "2026-03-02T09:02:48+08:00")
    }

    @Test func windowsLineEndingsAreLines() throws {
        #expect(try UsageTrace.parse("2026-03-02T09:02:48+08:00\r\n2026-03-03T09:02:48+08:00\r\n").count == 2)
    }

    @Test func aBadLineIsNamed() {
        let error = #expect(throws: UsageTrace.ParseError.self) {
            try UsageTrace.parse("2026-03-02T09:02:48+08:00\n09:00 tomorrow\n")
        }
        #expect(error?.line == 2 && error?.description.hasPrefix("-:2: \"09:00 tomorrow\"") == true)
        for bad in ["2026-03-02T09:02:48", "2026-02-30T09:00:00Z", "2026-03-02T25:00:00+01:00", "2026-03-02T09:00:00+1:00"] {
            #expect(throws: UsageTrace.ParseError.self, "\(bad)") { try UsageTrace.parse(bad) }
        }
    }
}

struct PlannerTests {
    static let limits = FetchPlanner.Limits(budgetPerDay: 12, minIntervalSeconds: 300, maxStalenessSeconds: 86_400)

    static func trace(_ name: String) throws -> [UsageEvent] {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "txt", subdirectory: "Traces"))
        return try UsageTrace.read(path: url.path)
    }

    static let traceNames = ["habit-office", "habit-shift", "night-owl", "random-user", "bursty-dst"]

    /// Each trace simulated once, shared by the tests (a debug-build simulation takes seconds).
    static let reports: [String: Simulator.Report] = Dictionary(uniqueKeysWithValues: traceNames.map { name in
        (name, Simulator(limits: limits).run((try? trace(name)) ?? []))
    })

    @Test func coldStartBehavesLikeAPlainInterval() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let decision = FetchPlanner(limits: Self.limits).next(now: now, model: UsageModel(), recentFetches: [now])
        #expect(decision.date == now.addingTimeInterval(7200))  // 24 h / 12
        #expect(decision.reason.hasPrefix("cold start"))
    }

    @Test func aLearnedHabitIsFetchedJustBefore() throws {
        var model = UsageModel()
        // Monday to Thursday, a use at 08:55 local (UTC+1).
        for day in 0..<4 {
            let text = "2026-03-0\(2 + day)T08:55:00+01:00"
            model.add(try #require(try UsageTrace.parse(text).first))
        }
        let evening = try #require(try UsageTrace.parse("2026-03-05T20:00:00+01:00").first).date
        let decision = FetchPlanner(limits: Self.limits).next(now: evening, model: model, recentFetches: [evening])
        let local = LocalTime(decision.date, offsetSeconds: 3600)
        // Friday morning (no Friday seen yet: the weekday habit stands in), shortly before 08:55.
        #expect((8 * 60 + 25...8 * 60 + 55).contains(local.minuteOfDay), "\(decision)")
        #expect(decision.reason.contains("predicted use Fri 08:"), "\(decision.reason)")
    }

    @Test func theBudgetAndTheFloorHoldOnEveryTrace() throws {
        for name in Self.traceNames {
            let fetches = try #require(Self.reports[name]).fetchTimes
            #expect(fetches.count > 100, "\(name): the trace did not load")
            for (index, fetch) in fetches.enumerated() {
                if index > 0 { #expect(fetch.timeIntervalSince(fetches[index - 1]) >= 300 - 1e-6, "\(name)") }
                let window = fetches[index...].prefix { $0.timeIntervalSince(fetch) < 86_400 }
                #expect(window.count <= 12, "\(name): \(window.count) fetches in 24 h from \(fetch)")
            }
        }
    }

    @Test func habitsBeatTheFixedIntervalByFar() throws {
        for name in ["habit-office", "habit-shift", "night-owl"] {
            let report = try #require(Self.reports[name])
            // Floors for what the planner reaches today (bench/README.md), not the goals.
            #expect(report.adaptive.medianStalenessMinutes <= 0.25 * report.fixedInterval.medianStalenessMinutes, "\(name)")
            #expect(report.adaptive.freshAtUse >= 0.5, "\(name): \(report.adaptive)")
            #expect(report.adaptive.freshAtUse >= 3 * report.fixedInterval.freshAtUse, "\(name)")
        }
    }

    @Test func emittedFetchTimesGiveTheSameMetrics() throws {
        let uses = try Self.trace("habit-office")
        let report = try #require(Self.reports["habit-office"])
        // Recompute fresh-at-use from the fetch times alone, as anyone could from --emit-fetches.
        let text = report.fetchTimes.map { UsageTrace.format($0, offsetSeconds: 8 * 3600) }.joined(separator: "\n")
        let fetches = try UsageTrace.parse(text).map(\.date)
        let fresh = uses.filter { use in
            guard let last = fetches.last(where: { $0 <= use.date }) else { return false }
            return use.date.timeIntervalSince(last) <= 15 * 60
        }
        #expect(abs(Double(fresh.count) / Double(uses.count) - report.adaptive.freshAtUse) < 1e-9)
    }
}

/// Results fed back into the plan.
struct FeedbackTests {
    /// Results from their names, newest first.
    private func results(_ names: [String]) -> [FetchResult] { names.compactMap { FetchResult(name: $0, reason: "x") } }

    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let planner = FetchPlanner(limits: .init(budgetPerDay: 12, minIntervalSeconds: 0, maxStalenessSeconds: 86_400))

    @Test func feedbackIsReadFromTheResults() {
        let feedback = FetchPlanner.Feedback(resultsNewestFirst: results(["failed", "expired", "noData", "noData", "newData", "expired"]))
        #expect(feedback.consecutiveFailures == 2 && feedback.noDataRun == 2 && feedback.recentOverruns == 2)
    }

    @Test func failuresBackOffExponentiallyWithJitterAndNeverStop() {
        var waits: [Double] = []
        for failures in 1...12 {
            let decision = planner.next(now: now, model: UsageModel(), recentFetches: [now],
                                        feedback: .init(resultsNewestFirst: results(Array(repeating: "failed", count: failures))))
            waits.append(decision.date.timeIntervalSince(now))
            #expect(decision.reason.hasPrefix("failed \(failures) time(s) in a row: retry after"), "\(decision.reason)")
        }
        // 1, 2, 4, 8 ... minutes (±20 %), capped at an hour: never longer, never given up.
        #expect((48...72).contains(waits[0]) && waits[2] > waits[1] && waits[3] > waits[2], "\(waits)")
        #expect(waits.allSatisfy { $0 <= 1.2 * 3600 })
        #expect(waits.suffix(4).allSatisfy { (0.8 * 3600...1.2 * 3600).contains($0) }, "\(waits)")
    }

    @Test func aRunOfNoDataLowersTheBudgetAndNewDataRestoresIt() {
        let quiet = FetchPlanner.Feedback(resultsNewestFirst: results(Array(repeating: "noData", count: 6)))
        #expect(planner.budget(after: quiet).perDay == 4)
        #expect(planner.budget(after: quiet).reason?.contains("6 × no new data") == true)
        let lively = FetchPlanner.Feedback(resultsNewestFirst: results(["newData"] + Array(repeating: "noData", count: 6)))
        #expect(planner.budget(after: lively).perDay == 12 && planner.budget(after: lively).reason == nil)
        let overrunning = FetchPlanner.Feedback(resultsNewestFirst: results(["newData", "expired", "expired", "expired"]))
        #expect(planner.budget(after: overrunning).perDay == 7)
    }
}

/// The forecast follows the local clock across a daylight-saving change.
struct ForecastOffsetTests {
    @Test func aClockChangeAheadMovesTheHabitWithTheClock() throws {
        var model = UsageModel()
        for day in 2...8 {  // a week at 08:55, UTC+1
            model.add(try #require(try UsageTrace.parse(String(format: "2026-03-%02dT08:55:00+01:00", day)).first))
        }
        let start = try #require(try UsageTrace.parse("2026-03-09T00:00:00Z").first).date
        let peakHourUTC = { (forecast: [Double]) -> Int in
            let bin = forecast.indices.max { forecast[$0] < forecast[$1] }!
            return bin * UsageModel.binMinutes / 60
        }
        // As recorded (UTC+1): 08:55 local is 07:55 UTC. After the change (UTC+2): 06:55 UTC.
        #expect(peakHourUTC(model.forecast(from: start, bins: 288)) == 7)
        #expect(peakHourUTC(model.forecast(from: start, bins: 288, localOffset: { _ in 7200 })) == 6)
    }
}
