@testable import FetchdPlanner
import Foundation
import Testing

/// A habit that changes is followed within days, not weeks; a steady one is left alone.
struct HabitChangeTests {
    static let monday = 1_772_409_600.0  // 2026-03-02T00:00:00Z

    /// Uses at `minutes` (UTC) on days `days` from Monday 2 March 2026.
    static func add(_ model: inout UsageModel, days: Range<Int>, minutes: [Int]) {
        for day in days {
            for minute in minutes {
                model.add(UsageEvent(date: Date(timeIntervalSince1970: monday + Double(day * 86_400 + minute * 60)), utcOffsetSeconds: 0))
            }
        }
    }

    /// Expected uses within 15 minutes of `minute` on `weekday` of a profile.
    static func near(_ profile: [[Double]], weekday: Int, minute: Int) -> Double {
        let bin = minute / UsageModel.binMinutes
        return (bin - 3...bin + 3).reduce(0) { $0 + profile[weekday][$1] }
    }

    @Test func threeDaysOfANewHabitOutweighFourWeeksOfTheOld() {
        var model = UsageModel()
        Self.add(&model, days: 0..<28, minutes: [535, 1325])  // 08:55 and 22:05 for four weeks
        Self.add(&model, days: 28..<31, minutes: [435, 1410])  // then 07:15 and 23:30, Monday to Wednesday
        let thursday = Date(timeIntervalSince1970: Self.monday + 31 * 86_400 + 1800)
        let raw = model.profile(at: thursday), adapted = model.adaptedProfile(at: thursday)
        // The half-life alone still favours the old habit...
        #expect(Self.near(raw, weekday: 3, minute: 535) > Self.near(raw, weekday: 3, minute: 435))
        // ...the recent days, which the old profile did not expect, take over.
        #expect(Self.near(adapted, weekday: 3, minute: 435) > 2 * Self.near(adapted, weekday: 3, minute: 535),
                "\(Self.near(adapted, weekday: 3, minute: 435)) vs \(Self.near(adapted, weekday: 3, minute: 535))")
        #expect(Self.near(adapted, weekday: 3, minute: 1410) > Self.near(adapted, weekday: 3, minute: 1325))
        // The weekend kind has seen no change (its recent days had the old habit).
        #expect(adapted[5] == raw[5] && adapted[6] == raw[6])
    }

    @Test func aSteadyHabitWithAnOddUseIsNotMoved() {
        var model = UsageModel()
        Self.add(&model, days: 0..<30, minutes: [535, 755, 1325])
        Self.add(&model, days: 27..<28, minutes: [900])  // one unplanned use among the recent days
        let now = Date(timeIntervalSince1970: Self.monday + 30 * 86_400 + 1800)
        #expect(model.adaptedProfile(at: now) == model.profile(at: now))
    }

    @Test func scatteredUsesAreNeverTakenForAChange() {
        let model = ScatteredUseTests.scattered(days: 28)
        let now = Date(timeIntervalSince1970: Self.monday + 28 * 86_400 + 1800)
        #expect(model.adaptedProfile(at: now) == model.profile(at: now))
    }

    @Test func habitShiftsNewHabitIsServedTheWeekAfterTheChange() throws {
        let weeks = try #require(PlannerTests.reports["habit-shift"]).freshAtUseByWeek
        // The habit changes on day 30 (week 5); week 6 was 0.64 before the recent days counted.
        #expect(weeks.count == 9 && weeks[5] >= 0.75, "\(weeks)")
    }
}
