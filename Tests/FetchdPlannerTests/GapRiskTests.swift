@testable import FetchdPlanner
import Foundation
import Testing

/// Real sessions cluster: the learned risk by time since the latest use finds a follow-up
/// the time of day cannot show, and the scattered-use forecast plans for it.
struct GapRiskTests {
    static let monday = 1_772_409_600.0  // 2026-03-02T00:00:00Z

    /// `days` days; each day one use at a random minute between 08:00 and 20:00 and, when
    /// `followUp`, another 60 to 70 minutes after it.
    static func model(days: Int, followUp: Bool) -> UsageModel {
        var model = UsageModel()
        var random = SplitMix(seed: 11)
        for day in 0..<days {
            let first = 480 + Int(random.unit() * 720), later = first + 60 + Int(random.unit() * 10)
            for minute in followUp ? [first, later] : [first] {
                model.add(UsageEvent(date: Date(timeIntervalSince1970: monday + Double(day * 86_400 + minute * 60)), utcOffsetSeconds: 0))
            }
        }
        return model
    }

    @Test func aFollowUpWithinTheHourAfterIsLearned() throws {
        let now = Date(timeIntervalSince1970: Self.monday + 28 * 86_400)
        let clustered = Self.model(days: 28, followUp: true)
        let risk = clustered.scattered.gapRisk(profile: clustered.scattered.profile(at: now), at: now)
        let hourClass = try #require(ScatteredUse.gapClass(minutes: 70))
        #expect(risk[hourClass] > 3, "\(risk)")
        // The classes right after a use and half an hour after the follow-ups hold no next use:
        // below the population's risk there.
        #expect(risk[0] < PopulationPrior.gapRisk[0] && risk[hourClass + 2] < PopulationPrior.gapRisk[hourClass + 2], "\(risk)")
        // One use a day: the next comes a day later, whatever the time of day expected.
        let single = Self.model(days: 28, followUp: false)
        let flat = single.scattered.gapRisk(profile: single.scattered.profile(at: now), at: now)
        #expect(flat[hourClass] < 0.75 * PopulationPrior.gapRisk[hourClass], "\(flat)")
        // With no uses the population's risk stands.
        #expect(UsageModel().scattered.gapRisk(profile: single.scattered.profile(at: now), at: now) == PopulationPrior.gapRisk)
    }

    @Test func theForecastRisesWhereAFollowUpIsLikely() throws {
        let clustered = Self.model(days: 28, followUp: true)
        let latest = try #require(clustered.sessions.last).date
        // Ten minutes after the latest use: the bins 60 to 75 minutes after it.
        let now = latest.addingTimeInterval(600)
        let with = clustered.scattered.forecast(from: now, bins: 48)
        let without = clustered.scattered.forecast(from: now, bins: 48, withGapRisk: false)
        let followUp = 10..<13  // 60 to 75 minutes after the use
        let sum = { (values: [Double]) in followUp.reduce(0) { $0 + values[$1] } }
        #expect(sum(with) > 3 * sum(without), "\(sum(with)) against \(sum(without))")
    }

    @Test func theScatteredProfileHoldsTheUsesOfADay() {
        let now = Date(timeIntervalSince1970: Self.monday + 28 * 86_400)
        let model = ScatteredUseTests.scattered(days: 28)
        let profile = model.scattered.profile(at: now)
        // Three uses a day, every day of both kinds.
        for kind in 0..<2 {
            let total = profile[kind].reduce(0, +)
            #expect(abs(total - 3) < 0.6, "kind \(kind): \(total)")
        }
        #expect(UsageModel().scattered.forecast(from: now, bins: 10) == Array(repeating: 0, count: 10))
    }

    @Test func everyPolicyKeepsTheBudgetAndLearnedServesClusteredUseBest() {
        // Clustered uses at random times of day: the time since the latest use is the only guide.
        let uses = Self.model(days: 42, followUp: true).sessions
        var fresh: [FetchPlanner.Policy: Double] = [:]
        for policy in FetchPlanner.Policy.allCases {
            var simulator = Simulator(limits: .init(budgetPerDay: 12, minIntervalSeconds: 300, maxStalenessSeconds: 86_400))
            simulator.policy = policy
            let report = simulator.run(uses)
            let times = report.fetchTimes
            for (index, time) in times.enumerated() where index >= 12 {
                #expect(time.timeIntervalSince(times[index - 12]) >= 86_400, "\(policy): 13 fetches within 24 h")
            }
            fresh[policy] = report.adaptive.freshAtUse
        }
        #expect(fresh[.learned]! > fresh[.timeOfDay]! + 0.05 && fresh[.learned]! > fresh[.profile]! + 0.05, "\(fresh)")
    }
}

/// Before two days of use the first plans come from the population's hours of use at the
/// user's own rate, not from a plain interval through the night.
struct PopulationPriorTests {
    @Test func theFirstDayIsPlannedOnPeoplesUsualHours() throws {
        var model = UsageModel()
        // One use on Monday at 10:00 UTC; asked at 02:00 the next night.
        model.add(UsageEvent(date: Date(timeIntervalSince1970: GapRiskTests.monday + 36_000), utcOffsetSeconds: 0))
        let now = Date(timeIntervalSince1970: GapRiskTests.monday + 86_400 + 7_200)
        let limits = FetchPlanner.Limits(budgetPerDay: 12, minIntervalSeconds: 300, maxStalenessSeconds: 86_400)
        let decision = FetchPlanner(limits: limits).next(now: now, model: model, recentFetches: [now])
        #expect(decision.reason.hasPrefix("cold start (1 day(s) of use, people's usual hours): predicted use"), "\(decision.reason)")
        // Not every 2 h through the night: the first fetch waits for the morning.
        let hour = LocalTime(decision.date, offsetSeconds: 0).minuteOfDay / 60
        #expect((6..<12).contains(hour), "\(decision.date)")
        // The other policies keep the plain interval until the model is warm.
        var plain = FetchPlanner(limits: limits)
        plain.policy = .timeOfDay
        #expect(plain.next(now: now, model: model, recentFetches: [now]).date == now.addingTimeInterval(7_200))
    }

    @Test func thePriorsAreShares() {
        for kind in 0..<2 { #expect(abs(PopulationPrior.hourShare[kind].reduce(0, +) - 1) < 0.001) }
        #expect(PopulationPrior.gapRisk.count == ScatteredUse.gapClassesMinutes.count)
    }
}
