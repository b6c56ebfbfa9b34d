@testable import FetchdPlanner
import Foundation
import Testing

/// The forecast updates a habit's episode under way on what happened today: a use not yet come
/// is likelier in what is left of it, a use that came (even early) is not expected again.
struct ForecastEpisodeTests {
    /// A week of uses at 08:55 UTC, then the forecast from 09:05 on the next day.
    static func habit(todayUse: String? = nil) throws -> (model: UsageModel, start: Date, profileAtStart: Double) {
        var model = UsageModel()
        for day in 2...8 {
            model.add(try #require(try UsageTrace.parse(String(format: "2026-03-%02dT08:55:00Z", day)).first))
        }
        if let todayUse { model.add(try #require(try UsageTrace.parse(todayUse).first)) }
        let start = try #require(try UsageTrace.parse("2026-03-09T09:05:00Z").first).date
        let local = LocalTime(start, offsetSeconds: 0)
        return (model, start, model.profile(at: start)[local.weekday][local.minuteOfDay / UsageModel.binMinutes])
    }

    @Test func aHabitNotYetUsedIsLikelierInWhatIsLeftOfIt() throws {
        let (model, start, profile) = try Self.habit()
        let forecast = model.forecast(from: start, bins: 12)
        #expect(profile > 0)
        #expect(forecast[0] > 1.5 * profile)  // most of the episode passed without its use
    }

    @Test func aUseThatCameEarlyConsumesItsEpisode() throws {
        let (model, start, profile) = try Self.habit(todayUse: "2026-03-09T08:30:00Z")
        let forecast = model.forecast(from: start, bins: 12)
        #expect(forecast[0] < 0.5 * profile)
    }

    @Test func episodesFarAheadAreLeftAlone() throws {
        let (model, _, _) = try Self.habit()
        // From 03:00 the 08:55 episode is more than an hour away: the plain profile.
        let start = try #require(try UsageTrace.parse("2026-03-09T03:00:00Z").first).date
        let forecast = model.forecast(from: start, bins: 96)
        let profile = model.profile(at: start)[0]
        for bin in 0..<96 { #expect(abs(forecast[bin] - profile[36 + bin]) < 1e-12) }
    }
}
