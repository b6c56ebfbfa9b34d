@testable import FetchdPlanner
import Foundation
import Testing

/// Until a weekend has been seen, the weekdays' habits stand in for it; once one has passed,
/// what it showed counts (no use at all included).
struct FirstWeekendTests {
    /// Monday 2 to Friday 6 March 2026, a use at 08:55 UTC each day.
    static func weekdayHabit() throws -> UsageModel {
        var model = UsageModel()
        for day in 2...6 {
            model.add(try #require(try UsageTrace.parse(String(format: "2026-03-%02dT08:55:00Z", day)).first))
        }
        return model
    }

    static let habitBin = (8 * 60 + 55) / UsageModel.binMinutes

    @Test func theFirstWeekendBorrowsTheWeekdayHabit() throws {
        let model = try Self.weekdayHabit()
        let fridayEvening = try #require(try UsageTrace.parse("2026-03-06T20:00:00Z").first).date
        let profile = model.profile(at: fridayEvening)
        #expect(profile[5][Self.habitBin] > 0.5 * profile[4][Self.habitBin], "\(profile[5][Self.habitBin])")
        #expect(profile[6][Self.habitBin] > 0)
        // So Saturday morning gets a fetch just before 08:55, not one at max_staleness.
        let planner = FetchPlanner(limits: FetchPlanner.Limits(budgetPerDay: 12, minIntervalSeconds: 300, maxStalenessSeconds: 86_400))
        let saturdayNight = try #require(try UsageTrace.parse("2026-03-07T02:00:00Z").first).date
        let decision = planner.next(now: saturdayNight, model: model, recentFetches: [saturdayNight])
        let local = LocalTime(decision.date, offsetSeconds: 0)
        #expect(local.weekday == 5 && (8 * 60 + 15...8 * 60 + 55).contains(local.minuteOfDay), "\(decision)")
    }

    @Test func aWeekendWithoutUseIsTakenAsSuch() throws {
        let model = try Self.weekdayHabit()
        // Monday: Saturday and Sunday passed without a use.
        let monday = try #require(try UsageTrace.parse("2026-03-09T06:00:00Z").first).date
        let profile = model.profile(at: monday)
        #expect(profile[5][Self.habitBin] == 0 && profile[6][Self.habitBin] == 0)
        #expect(profile[0][Self.habitBin] > 0)
    }
}
