import Foundation

extension FetchPlanner {
    /// At most this many fetches are planned per fetch of the budget (the late ones of each
    /// chain count for little), which also bounds a decision's cost.
    static let mostPlannedPerBudget = 3
    /// A diffuse forecast is smoothed over this many bins on each side (30 min).
    static let diffuseSmoothingBins = 6
    /// Uses whose `UsageModel.recurrence` is under this are scattered: planned as diffuse
    /// whatever the day's forecast looks like (from a few days of data it looks like habits).
    static let scatteredRecurrence = 1.4
    /// At and above this recurrence the uses are habits: a diffuse forecast (a habit with a wide
    /// jitter) is not mixed with the hours of use.
    static let habitRecurrence = UsageModel.habitRecurrence
    /// The share of a diffuse forecast taken from the hours of use when the uses are scattered
    /// (less, down to none, as the recurrence rises to `habitRecurrence`).
    static let hoursOfUseShare = 0.25

    /// How uses with no clear habit are forecast; habits are planned alike by all three.
    public enum Policy: String, Sendable, CaseIterable {
        /// The time of day over a month, by kind of day, times the learned risk of a use by the
        /// time since the latest one (`ScatteredUse.gapRisk`); a plan for "fresh within 15 min".
        case learned
        /// The same without the time since the latest use.
        case timeOfDay = "time-of-day"
        /// The habit profile smoothed over 30 minutes and mixed with the hours of use, planned
        /// for an even spread (`Cost.diffuse`).
        case profile
    }

    /// What a plan minimises at the predicted uses, in seconds of staleness per expected use:
    /// staleness capped at `stalenessCapSeconds`, a penalty for a use that is not fresh, and the
    /// longer staleness capped at `spreadCapSeconds`.
    public struct Cost: Sendable, Equatable {
        /// The weight of the staleness capped near the fresh limit: a habit's use is served best
        /// by the fetch just before it.
        public var cappedWeight: Double
        /// The weight of a use not fresh, in units of `stalenessCapSeconds`: for scattered uses
        /// any fetch within the fresh limit before them serves them as well.
        public var staleWeight: Double
        /// The weight of the longer staleness.
        public var spreadWeight: Double
        /// The cap of the longer staleness, in seconds.
        public var spreadCapSeconds: Double

        /// Habits: just before the use, and a little spread.
        public static let habit = Cost(cappedWeight: 1, staleWeight: 0, spreadWeight: 0.1, spreadCapSeconds: 6 * 3600)
        /// `Policy.profile`'s diffuse forecasts: the longer staleness weighs as much as "was it
        /// fresh", so fetches spread over the hours of use instead of chasing the last few uses'
        /// exact times, which left long gaps (a worse p90 and mean than a fixed interval).
        public static let diffuse = Cost(cappedWeight: 1, staleWeight: 0, spreadWeight: 1, spreadCapSeconds: 6 * 3600)
        /// Scattered uses under `Policy.learned` and `.timeOfDay`: as many uses fresh as can be,
        /// and enough of the staleness up to 3 hours that the tail stays near a fixed interval's.
        /// On the real traces this weight cost about 0.1 of the fresh-at-use gain and brought the
        /// 90th percentile from about 2.7 times the interval's to 1.1 (measured by hand with the
        /// weight changed, bench/README.md); less left the user with no habit (random-user) worse
        /// off than with a fixed interval (`ScatteredUseTests`).
        public static let scattered = Cost(cappedWeight: 0, staleWeight: 1, spreadWeight: 0.35, spreadCapSeconds: 3 * 3600)
    }

    /// The forecast the plan is made on, and what the plan minimises. Habits (uses that recur
    /// at the same times of day, in a forecast that is not diffuse) are planned on the habit
    /// profile for the fetch just before each use. Uses with no habit to wait for (half their
    /// forecast spread over many bins, or uses that do not recur) are planned as `policy` says:
    /// by default on a month of the time of day and the time since the latest use, the mix
    /// that served real people's usage best (bench/README.md).
    func shapedForecast(now: Date, model: UsageModel) -> (expected: [Double], cost: Cost) {
        let recurrence = model.recurrence(at: now)
        let scattered = recurrence < Self.scatteredRecurrence
        let scatteredForecast = {
            model.scattered.forecast(from: now, bins: Self.horizonBins, localOffset: localOffset,
                                    withGapRisk: policy == .learned)
        }
        // Uses that do not recur need no habit forecast (the dearer of the two) unless `profile`
        // shapes it.
        if scattered, policy != .profile { return (scatteredForecast(), .scattered) }
        let expected = model.forecast(from: now, bins: Self.horizonBins, localOffset: localOffset)
        guard scattered || ForecastShape.isDiffuse(expected) else { return (expected, .habit) }
        switch policy {
        case .learned, .timeOfDay: return (scatteredForecast(), .scattered)
        case .profile: return (profileShaped(expected, now: now, model: model, recurrence: recurrence), .diffuse)
        }
    }

    /// `Policy.profile`: the forecast smoothed, and for uses that do not recur, part of it
    /// replaced by the hours of use of all days pooled, so that no stretch of those hours goes
    /// without a fetch just because the few days learned so far had no use there.
    func profileShaped(_ expected: [Double], now: Date, model: UsageModel, recurrence: Double) -> [Double] {
        let smooth = ForecastShape.smoothed(expected, radius: Self.diffuseSmoothingBins)
        let towardHabit: Double = (Self.habitRecurrence - recurrence) / (Self.habitRecurrence - Self.scatteredRecurrence)
        let share: Double = Self.hoursOfUseShare * min(1, max(0, towardHabit))
        guard share > 0 else { return smooth }
        let hours = model.hoursOfUse(from: now, bins: Self.horizonBins, localOffset: localOffset)
        return zip(smooth, hours).map { (day: Double, pooled: Double) in (1 - share) * day + share * pooled }
    }
}
