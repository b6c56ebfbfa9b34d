@testable import FetchdPlanner
import Foundation
import Testing

/// The safeguard: where the plan served the user's recent uses worse than a fixed interval with
/// as many fetches would have, the plan moves toward that interval.
struct SafeguardTests {
    static let monday = 1_772_409_600.0  // 2026-03-02T00:00:00Z
    static func at(_ day: Int, _ minute: Int) -> Date { Date(timeIntervalSince1970: monday + Double(day * 86_400 + minute * 60)) }

    /// A record of `days` days, three uses a day, with `fresh` of each day's uses fetched for
    /// 5 minutes before, and 12 fetches a day in all.
    static func record(days: Int, freshPerDay: Int) -> FetchPlanner.TrackRecord {
        var sessions: [UsageEvent] = [], fetches: [Date] = []
        for day in 0..<days {
            let uses = [540, 780, 1260]
            sessions += uses.map { UsageEvent(date: at(day, $0), utcOffsetSeconds: 0) }
            // The day's fetches: 5 minutes before `freshPerDay` of the uses, the rest far from any.
            var minutes = uses.prefix(freshPerDay).map { $0 - 5 }
            minutes += [0, 60, 120, 180, 240, 300, 360, 420, 660, 900, 1020, 1380].prefix(12 - minutes.count)
            fetches += minutes.sorted().map { at(day, $0) }
        }
        return FetchPlanner.TrackRecord(sessions: sessions, freshFetches: fetches, now: at(days, 0))
    }

    @Test func theRecordCountsUsesFreshAgainstTheIntervalsExpectation() {
        let record = Self.record(days: 28, freshPerDay: 2)
        #expect(record.uses == 84)
        #expect(record.freshUses == 56)
        // 12 fetches a day: a fetch every 2 h serves a use fresh one time in eight.
        #expect(abs(record.intervalFreshUses - 84.0 / 8) < 0.2, "\(record)")
        // Uses before the window's first fetch, and fetches older than the window, do not count.
        let long = Self.record(days: 40, freshPerDay: 2)
        #expect(long.uses == 84)
    }

    @Test func theIntervalsShareOfDaysIsSpreadEvenly() {
        for share in [0.1, 0.25, 0.5, 0.9] {
            for start in [0, 20_000] {
                let days = (start..<(start + 40)).filter { FetchPlanner.isIntervalDay($0, share: share) }.count
                #expect(abs(Double(days) - 40 * share) <= 2, "\(share): \(days) of 40")
            }
        }
        #expect(!(0..<100).contains { FetchPlanner.isIntervalDay($0, share: 0) })
        #expect((0..<100).allSatisfy { FetchPlanner.isIntervalDay($0, share: 1) })
    }

    @Test func aPlanThatBeatsTheIntervalIsLeftAlone() {
        #expect(FetchPlanner.intervalShare(Self.record(days: 28, freshPerDay: 1)) == 0)
        #expect(FetchPlanner.intervalShare(FetchPlanner.TrackRecord()) == 0)
    }

    @Test func aShortfallWithinChanceIsLeftAlone() {
        var record = FetchPlanner.TrackRecord()
        record.uses = 84
        record.intervalFreshUses = 10.5
        record.freshUses = 10  // behind the interval, within one standard deviation of it
        #expect(FetchPlanner.intervalShare(record) == 0)
    }

    @Test func aClearShortfallMovesThePlanTowardTheInterval() {
        let losing = Self.record(days: 28, freshPerDay: 0)
        #expect(losing.freshUses == 0)
        #expect(FetchPlanner.intervalShare(losing) == 1, "\(losing)")
        var record = losing
        record.freshUses = 5  // 10.5 expected: about two standard deviations behind
        let share = FetchPlanner.intervalShare(record)
        #expect(share > 0.2 && share < 0.8, "\(share)")
    }

    @Test func underTheIntervalsWholeShareTheFetchesFollowAFixedInterval() {
        // A strong habit at 09:00, 13:00 and 21:00, whose plan would crowd the fetches there,
        // and a record of a plan that served none of the last four weeks' uses fresh.
        let model = ScatteredUseTests.habits(days: 28)
        var feedback = FetchPlanner.Feedback()
        feedback.trackRecord = Self.record(days: 28, freshPerDay: 0)
        let planner = FetchPlanner(limits: PlannerTests.limits)
        var now = Self.at(28, 0), fetches = [now.addingTimeInterval(-600)]
        for _ in 0..<12 {
            let decision = planner.next(now: now, model: model, recentFetches: fetches, feedback: feedback)
            fetches.append(decision.date)
            now = decision.date
        }
        let gaps = zip(fetches.dropFirst(), fetches.dropFirst(2)).map { $1.timeIntervalSince($0) }
        #expect(gaps.allSatisfy { $0 == 7200 }, "\(gaps)")
        #expect(fetches.last?.timeIntervalSince1970.truncatingRemainder(dividingBy: 7200) == 0)
    }

    @Test func theDecisionSaysWhenTheSafeguardActs() {
        let model = ScatteredUseTests.habits(days: 28)
        let now = Self.at(28, 0)
        var feedback = FetchPlanner.Feedback()
        feedback.trackRecord = Self.record(days: 28, freshPerDay: 0)
        let planner = FetchPlanner(limits: PlannerTests.limits)
        let decision = planner.next(now: now, model: model, recentFetches: [now], feedback: feedback)
        #expect(decision.reason == "safeguard: a fixed interval on 100 % of days (0 of 84 uses fresh in 4 weeks, an interval: 11)",
                "\(decision.reason)")
    }

    /// The judge's fixed interval: as many fetches as `fetches` holds from 24 h before the first
    /// use to the last, evenly spread, its share of uses fresh averaged over 12 phases.
    static func intervalFresh(uses: [Date], fetches: [Date]) -> Double {
        let start = uses[0].addingTimeInterval(-86_400), end = uses[uses.count - 1]
        let count = max(1, fetches.filter { $0 >= start && $0 <= end }.count)
        let interval = end.timeIntervalSince(start) / Double(count)
        let shares = (0..<12).map { phase -> Double in
            let offset = Double(phase) / 12 * interval
            let fresh = uses.filter { use in
                let since = use.timeIntervalSince(start) - offset
                return since >= 0 && since.truncatingRemainder(dividingBy: interval) <= FetchPlanner.freshSeconds
            }
            return Double(fresh.count) / Double(uses.count)
        }
        return shares.reduce(0, +) / 12
    }

    /// People a learned plan could serve worse than a timer (bench/adversarial_traces.py): a
    /// random user, three habits that move 4 hours later mid-trace, a day user turned night user,
    /// habits 40 minutes later every day; and the synthetic traces. Each gets at least the
    /// interval's uses fresh, less a tolerance for chance on the random user, whose uses no
    /// schedule can foresee (one standard deviation of its count of uses fresh is about 0.016).
    @Test(arguments: ["adversarial-random", "adversarial-shift", "adversarial-day-to-night", "adversarial-drift"]
        + PlannerTests.traceNames)
    func nobodyGetsFewerUsesFreshThanFromATimer(name: String) throws {
        let uses = try PlannerTests.trace(name)
        let report = name.hasPrefix("adversarial")
            ? Simulator(limits: PlannerTests.limits).run(uses) : try #require(PlannerTests.reports[name])
        let interval = Self.intervalFresh(uses: uses.map(\.date), fetches: report.fetchTimes)
        let tolerance = name == "adversarial-random" ? 0.03 : 0
        #expect(report.adaptive.freshAtUse >= interval - tolerance, "\(name): \(report.adaptive.freshAtUse) vs \(interval)")
    }
}
