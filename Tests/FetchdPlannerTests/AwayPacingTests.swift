@testable import FetchdPlanner
import Foundation
import Testing

/// After a day without use the user is away: fetches are paced at `awayIntervalSeconds`
/// instead of spending the day's budget on nobody, and the full plan comes back with the next use.
struct AwayPacingTests {
    static let monday = 1_772_409_600.0  // 2026-03-02T00:00:00Z
    static let planner = FetchPlanner(limits: .init(budgetPerDay: 12, minIntervalSeconds: 300, maxStalenessSeconds: 86_400))

    /// Four weeks of scattered uses (`ScatteredUseTests.scattered`), then `quietDays` more days.
    static func at(quietDays: Double) -> (model: UsageModel, now: Date) {
        let model = ScatteredUseTests.scattered(days: 28)
        return (model, Date(timeIntervalSince1970: monday + (28 + quietDays) * 86_400 + 10 * 3600))
    }

    @Test func aDayWithoutUsePacesTheNextFetch() throws {
        let (model, now) = Self.at(quietDays: 1.5)
        let lastFetch = now.addingTimeInterval(-600)
        let decision = Self.planner.next(now: now, model: model, recentFetches: [lastFetch])
        #expect(decision.date.timeIntervalSince(lastFetch) >= FetchPlanner.awayIntervalSeconds, "\(decision)")
        #expect(decision.reason.hasPrefix("no use for a day: at most every 3 h; "), "\(decision.reason)")
    }

    @Test func aRecentUseKeepsTheFullPlan() throws {
        var (model, now) = Self.at(quietDays: 1.5)
        model.add(UsageEvent(date: now.addingTimeInterval(-1800), utcOffsetSeconds: 0))
        let lastFetch = now.addingTimeInterval(-600)
        let decision = Self.planner.next(now: now, model: model, recentFetches: [lastFetch])
        #expect(decision.date.timeIntervalSince(lastFetch) < FetchPlanner.awayIntervalSeconds, "\(decision)")
        #expect(!decision.reason.contains("no use for a day"), "\(decision.reason)")
    }

}
