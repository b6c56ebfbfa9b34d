@testable import FetchdPlanner
import Foundation
import Testing

/// Uses that do not recur at the same times of day (no habit) are planned over the hours of
/// use of all days pooled, so that they are never served worse than by a fixed interval.
struct ScatteredUseTests {
    /// `days` days from Monday 2 March 2026 (UTC), each with uses at `minutes` of the day.
    static func model(days: Int, minutes: (Int, inout SplitMix) -> [Int]) -> UsageModel {
        var model = UsageModel()
        var random = SplitMix(seed: 7)
        let monday = 1_772_409_600.0  // 2026-03-02T00:00:00Z
        for day in 0..<days {
            for minute in minutes(day, &random).sorted() {
                model.add(UsageEvent(date: Date(timeIntervalSince1970: monday + Double(day * 86_400 + minute * 60)), utcOffsetSeconds: 0))
            }
        }
        return model
    }

    /// Three uses a day anywhere between 08:00 and 23:00.
    static func scattered(days: Int) -> UsageModel {
        model(days: days) { _, random in (0..<3).map { _ in 480 + Int(random.unit() * 900) } }
    }

    /// 08:55, 12:35 and 22:05, each a few minutes off.
    static func habits(days: Int) -> UsageModel {
        model(days: days) { _, random in [535, 755, 1325].map { $0 + Int(random.unit() * 12) - 6 } }
    }

    @Test func habitsRecurAndScatteredUsesDoNot() {
        let now = Date(timeIntervalSince1970: 1_772_409_600 + 28 * 86_400)
        let scattered = Self.scattered(days: 28).recurrence(at: now)
        let habits = Self.habits(days: 28).recurrence(at: now)
        #expect(scattered < FetchPlanner.scatteredRecurrence, "\(scattered)")
        #expect(habits > FetchPlanner.habitRecurrence, "\(habits)")
        #expect(UsageModel().recurrence(at: now) == 0)
    }

    @Test func theHoursOfUseCoverEveryDayAlike() {
        let model = Self.scattered(days: 14)
        let midnight = Date(timeIntervalSince1970: 1_772_409_600 + 14 * 86_400)
        let hours = model.hoursOfUse(from: midnight, bins: UsageModel.binsPerDay)
        let perHour = { (hour: Int) in hours[(hour * 12)..<(hour * 12 + 12)].reduce(0, +) }
        // About 3 uses over 15 hours: ~0.2 an hour in the daytime (less where the sample is thin),
        // none deep in the night.
        #expect((8...22).allSatisfy { perHour($0) > 0.02 }, "\((0..<24).map(perHour))")
        #expect((1...5).allSatisfy { perHour($0) == 0 })
        #expect(abs(hours.reduce(0, +) - 3) < 0.5, "\(hours.reduce(0, +))")
    }

    @Test func aUserWithoutHabitsIsNeverServedWorseThanByAFixedInterval() throws {
        let report = try #require(PlannerTests.reports["random-user"])
        let adaptive = report.adaptive, fixed = report.fixedInterval
        #expect(adaptive.medianStalenessMinutes <= fixed.medianStalenessMinutes, "\(adaptive) vs \(fixed)")
        #expect(adaptive.p90StalenessMinutes <= fixed.p90StalenessMinutes, "\(adaptive) vs \(fixed)")
        #expect(adaptive.meanStalenessMinutes <= fixed.meanStalenessMinutes, "\(adaptive) vs \(fixed)")
    }
}
