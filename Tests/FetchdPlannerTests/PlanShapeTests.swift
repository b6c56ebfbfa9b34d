@testable import FetchdPlanner
import Foundation
import Testing

/// How the plan's shape follows the forecast's: late fetches of a chain through a habit cost
/// only the chance they are made, a forecast with no habit is planned on its hours of use, and
/// a habit seen on few days is spread wider than one seen on many.
struct PlanShapeTests {
    /// A day of background with one habit episode of about one use over bins 100..<108.
    static func habitDay() -> [Double] {
        var expected = Array(repeating: 0.0, count: 288)
        for (offset, value) in [0.05, 0.1, 0.15, 0.2, 0.2, 0.15, 0.1, 0.05].enumerated() { expected[100 + offset] = value }
        return expected
    }

    @Test func lateFetchesOfAChainCostTheChanceTheyAreMade() {
        let made = ForecastShape.madeShare(Self.habitDay())
        #expect(made[99] == 1)  // outside the episode: always made
        #expect(made[100] == 1)  // its first bin: the use has not come yet
        #expect(abs(made[103] - 0.7) < 1e-9)  // 0.05 + 0.1 + 0.15 of the use came before it
        #expect(made[107] == ForecastShape.leastMadeShare)  // late: floored, never free
        // A stretch holding many uses (not one habit use) has no such saving.
        let busy = Array(repeating: 0.5, count: 288)
        #expect(ForecastShape.madeShare(busy).allSatisfy { $0 == 1 })
    }

    @Test func theChainUsesMoreOfTheBudgetThanItCounts() throws {
        // Three habits a day with a week of history, budget 6: the plan may hold more than six
        // fetches (the late ones of each chain are rarely made), and the first is within budget.
        var model = UsageModel()
        for day in 2...8 {
            for time in ["08:55", "12:35", "22:05"] {
                model.add(try #require(try UsageTrace.parse(String(format: "2026-03-%02dT\(time):00Z", day)).first))
            }
        }
        let now = try #require(try UsageTrace.parse("2026-03-09T06:00:00Z").first).date
        let planner = FetchPlanner(limits: .init(budgetPerDay: 6, minIntervalSeconds: 300, maxStalenessSeconds: 86_400))
        let plan = planner.plan(now: now, model: model, recentFetches: [])
        #expect(plan.count > 6)
        #expect(plan.count <= 3 * 6)
    }

    @Test func aHabitIsNotDiffuseAndScatteredUsesAre() {
        #expect(!ForecastShape.isDiffuse(Self.habitDay()))
        var scattered = Array(repeating: 0.0, count: 288)
        for bin in stride(from: 96, to: 276, by: 3) { scattered[bin] = 0.05 }  // 08:00-23:00, no peak
        #expect(ForecastShape.isDiffuse(scattered))
        #expect(!ForecastShape.isDiffuse(Array(repeating: 0.0, count: 288)))
        // Smoothing keeps the uses (away from the edges) and fills the gaps between them.
        let smooth = ForecastShape.smoothed(scattered, radius: 6)
        let kept: Double = smooth[100..<260].reduce(0, +)
        let before: Double = scattered[100..<260].reduce(0, +)
        #expect(abs(kept - before) < 0.1)
        #expect(smooth[97] > 0)
    }

    @Test func aHabitSeenOnFewDaysIsSpreadWider() {
        func spread(_ days: Int) -> Double {
            var variance = 0.0
            for (offset, weight) in UsageModel.kernel(daysOfUse: days) { variance += weight * Double(offset * offset) }
            return variance.squareRoot()
        }
        #expect(abs(spread(2) - 2) < 0.05)  // 10 minutes
        #expect(spread(2) > spread(4))
        #expect(UsageModel.kernel(daysOfUse: 30).count == UsageModel.kernel.count)  // the narrow kernel from 7 days on
    }
}
