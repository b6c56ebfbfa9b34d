@testable import FetchdPlanner
import Foundation
import Testing

/// The safeguard: where the plan served the user's recent uses worse than a fixed interval with
/// as many fetches would have, the plan moves toward that interval.
struct SafeguardTests {
    /// 2026-03-02T00:00:00Z, a Monday.
    static let monday = 1_772_409_600.0
    /// `minute` minutes into day `day` after `monday` (UTC).
    static func at(_ day: Int, _ minute: Int) -> Date { Date(timeIntervalSince1970: monday + Double(day * 86_400 + minute * 60)) }

    /// A record of `days` days, three uses a day, with `freshPerDay` of each day's uses fetched
    /// 5 minutes before, and 12 fetches a day in all.
    static func record(days: Int, freshPerDay: Int) -> TrackRecord {
        var sessions: [UsageEvent] = [], fetches: [Date] = []
        for day in 0..<days {
            let uses = [540, 780, 1260]
            sessions += uses.map { UsageEvent(date: at(day, $0), utcOffsetSeconds: 0) }
            // The day's fetches: 5 minutes before `freshPerDay` of the uses, the rest far from any.
            var minutes = uses.prefix(freshPerDay).map { $0 - 5 }
            minutes += [0, 60, 120, 180, 240, 300, 360, 420, 660, 900, 1020, 1380].prefix(12 - minutes.count)
            fetches += minutes.sorted().map { at(day, $0) }
        }
        return TrackRecord(sessions: sessions, freshFetches: fetches, now: at(days, 0))
    }

    /// Fetches every 2 h at half past the odd hours (UTC) for `days` days: none serves the
    /// habits of `ScatteredUseTests.habits` (08:55, 12:35, 22:05, each up to 6 minutes off) fresh.
    static func oddHours(days: Int) -> [Date] {
        (0..<days).flatMap { day in stride(from: 90, to: 1440, by: 120).map { at(day, $0) } }
    }

    @Test func theRecordCountsUsesFreshAgainstTheIntervalsExpectation() {
        let record = Self.record(days: 28, freshPerDay: 2)
        #expect(record.uses == 84)
        #expect(record.freshUses == 56)
        // 12 fetches a day: a fetch every 2 h serves a use fresh one time in eight.
        #expect(abs(record.intervalFreshUses - 84.0 / 8) < 0.2, "\(record)")
        // Uses before the window's first fetch, and fetches older than the window, do not count.
        let long = Self.record(days: 70, freshPerDay: 2)
        #expect(long.uses == 168)
    }

    @Test func theIntervalsDaysAreLeftOutOfTheRecord() {
        let sessions = ScatteredUseTests.habits(days: 28).sessions, fetches = Self.oddHours(days: 28)
        let all = TrackRecord(sessions: sessions, freshFetches: fetches, now: Self.at(28, 0))
        let some = TrackRecord(sessions: sessions, freshFetches: fetches, now: Self.at(28, 0)) { $0 % 2 == 0 }
        #expect(all.uses == sessions.count && all.freshUses == 0, "\(all)")
        #expect(some.uses > 0 && some.uses < all.uses)
    }

    @Test func aPlanThatBeatsTheIntervalIsLeftAlone() {
        #expect(Safeguard.intervalShare(Self.record(days: 28, freshPerDay: 1)) == 0)
        #expect(Safeguard.intervalShare(TrackRecord()) == 0)
    }

    @Test func aShortfallWithinChanceIsLeftAlone() {
        var record = TrackRecord()
        record.uses = 84
        record.intervalFreshUses = 10.5
        record.freshUses = 10  // behind the interval, within one standard deviation of it
        #expect(Safeguard.intervalShare(record) == 0)
        // A fetch every 15 minutes serves every use: then so must the plan, no more.
        record.intervalFreshUses = 84
        record.freshUses = 84
        #expect(Safeguard.intervalShare(record) == 0)
    }

    @Test func aClearShortfallMovesDaysToTheInterval() {
        let losing = Self.record(days: 28, freshPerDay: 0)
        #expect(losing.freshUses == 0)
        #expect(Safeguard.intervalShare(losing) == 1, "\(losing)")
        var record = losing
        record.freshUses = 5  // 10.5 expected: about 1.9 standard deviations behind
        let share = Safeguard.intervalShare(record)
        #expect(share > 0.2 && share < 0.8, "\(share)")
    }

    @Test func theIntervalsShareOfDaysIsSpreadEvenly() {
        for share in [0.1, 0.25, 0.5, 0.9] {
            for start in [0, 20_000] {
                let days = (start..<(start + 40)).filter { Safeguard.isIntervalDay($0, share: share) }.count
                #expect(abs(Double(days) - 40 * share) <= 2, "\(share): \(days) of 40")
            }
        }
        #expect(!(0..<100).contains { Safeguard.isIntervalDay($0, share: 0) })
        #expect((0..<100).allSatisfy { Safeguard.isIntervalDay($0, share: 1) })
        // A higher share keeps every interval day of a lower one.
        let nested = (0..<100).allSatisfy { !Safeguard.isIntervalDay($0, share: 0.3) || Safeguard.isIntervalDay($0, share: 0.6) }
        #expect(nested)
    }

    @Test func aTickRunEarlyIsNotFetchedAgain() {
        let tick = Self.at(10, 120)
        // A wake ran the 02:00 tick 90 s early: the next is 04:00, not 02:00 again.
        let early = tick.addingTimeInterval(-90)
        #expect(Safeguard.intervalTick(perDay: 12, now: early, latest: early) == Self.at(10, 240))
        #expect(Safeguard.intervalTick(perDay: 12, now: early, latest: nil) == tick)
    }

    @Test func onTheIntervalsDaysTheFetchesFollowAFixedInterval() throws {
        // A habit at 08:55, 12:35 and 22:05 that the last four weeks' fetches never served.
        let model = ScatteredUseTests.habits(days: 28)
        var feedback = FetchPlanner.Feedback()
        feedback.freshFetches = Self.oddHours(days: 28)
        // The share as each midnight finds it, and the first of the interval's days.
        let safeguard = { (day: Int) in
            Safeguard.share(sessions: model.sessions, freshFetches: feedback.freshFetches, dayStart: Self.at(day, 0))
        }
        let isIntervalDay = { (day: Int) in
            Safeguard.isIntervalDay(LocalTime(Self.at(day, 0), offsetSeconds: 0).dayNumber, share: safeguard(day).share)
        }
        let day = try #require((28..<40).first(where: isIntervalDay))
        let (share, record) = safeguard(day)
        #expect(share > 0.2 && share <= Safeguard.mostIntervalShare, "\(share) from \(record)")
        // Only the plan's own days count: a quarter of the 84 uses.
        #expect(record.freshUses == 0 && record.uses > 10 && record.uses < 40, "\(record)")
        let planner = FetchPlanner(limits: PlannerTests.limits)
        var now = Self.at(day, 0), fetches = [now.addingTimeInterval(-600)]
        for _ in 0..<11 {
            let decision = planner.next(now: now, model: model, recentFetches: fetches, feedback: feedback)
            #expect(decision.reason.hasPrefix("safeguard: a fixed interval on \(Int((share * 100).rounded())) % of days (0 of "),
                    "\(decision.reason)")
            fetches.append(decision.date)
            now = decision.date
        }
        let gaps = zip(fetches.dropFirst(), fetches.dropFirst(2)).map { $1.timeIntervalSince($0) }
        #expect(gaps.allSatisfy { $0 == 7200 }, "\(gaps)")
        #expect(fetches.last?.timeIntervalSince1970.truncatingRemainder(dividingBy: 7200) == 0)
        // On a day of the plan, its own decision, with the safeguard's figures beside it.
        let planDay = try #require((28..<40).first { !isIntervalDay($0) })
        let own = planner.next(now: Self.at(planDay, 0), model: model, recentFetches: [Self.at(planDay, 0)], feedback: feedback)
        #expect(own.reason.contains("; safeguard: the plan's day"), "\(own.reason)")
    }

    /// The loop closed: a plan that never serves a use fresh (each day's fetches come just after
    /// its uses), the safeguard's share found each midnight from what the days before gave, and
    /// the interval's days fetched every 2 h. From the fifth week on the user gets close to the
    /// interval's uses fresh, not the plan's none (the days the plan keeps, to find out whether
    /// it has recovered, cost the rest).
    @Test func aPlanThatIsAlwaysWrongEndsNearTheInterval() {
        var random = SplitMix(seed: 38)
        var sessions: [UsageEvent] = [], fetches: [Date] = [], fresh: [Bool] = []
        for day in 0..<150 {
            let (share, _) = Safeguard.share(sessions: sessions, freshFetches: fetches, dayStart: Self.at(day, 0))
            let uses = (0..<3).map { _ in Self.at(day, 480 + Int(random.unit() * 900)) }.sorted()
            let interval = Safeguard.isIntervalDay(LocalTime(Self.at(day, 0), offsetSeconds: 0).dayNumber, share: share)
            let today = interval ? stride(from: 0, to: 1440, by: 120).map { Self.at(day, $0) }
                : uses.map { $0.addingTimeInterval(60) } + (0..<9).map { Self.at(day, 20 * $0) }  // the rest at night
            for use in uses {
                let latest = (fetches + today).filter { $0 <= use }.max() ?? .distantPast
                if day >= 30 { fresh.append(use.timeIntervalSince(latest) <= FetchPlanner.freshSeconds) }
            }
            sessions += uses.map { UsageEvent(date: $0, utcOffsetSeconds: 0) }
            fetches = (fetches + today).sorted()
        }
        let share = Double(fresh.filter { $0 }.count) / Double(fresh.count)
        // The interval serves 1 use in 8 fresh; the plan alone, 0.02; the loop gives 0.11.
        #expect(share >= 0.8 / 8, "\(share)")
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
    /// habits 40 minutes later every day; and the synthetic traces. The planner, safeguard
    /// included, gives each at least the interval's uses fresh, less a tolerance for chance on
    /// the random user, whose uses no schedule can foresee (one standard deviation of its share
    /// of uses fresh is about 0.016). The planner wins on these without the safeguard's help:
    /// they check that the safeguard does not take the win away.
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
