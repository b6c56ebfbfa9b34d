import Foundation

/// Chooses a handler's next fetch: just before its predicted uses, within its budget.
///
/// It plans the next 24 hours greedily. Each candidate fetch time is scored by how much it
/// lowers the expected staleness of the content at the moments of use (capped, so that far-off
/// uses do not dominate); the best is taken, and so on until the budget for the day is spent.
/// The earliest planned fetch is the answer; after every fetch and every use the plan is made
/// again, so it follows what the user does. Prefix sums make each score O(1): a decision costs
/// a few thousand operations, whatever the length of the history.
public struct FetchPlanner: Sendable {
    /// The limits a plan respects.
    public struct Limits: Sendable, Equatable {
        /// Fetches per rolling 24 hours.
        public var budgetPerDay: Int
        /// The least time between two fetches, in seconds.
        public var minIntervalSeconds: Double
        /// The content is never older than this, predicted use or not, in seconds.
        public var maxStalenessSeconds: Double
        /// How long before the moment it serves a fetch is made, in seconds.
        public var leadSeconds: Double

        /// Creates limits.
        public init(budgetPerDay: Int, minIntervalSeconds: Double, maxStalenessSeconds: Double, leadSeconds: Double = 120) {
            self.budgetPerDay = max(1, budgetPerDay)
            self.minIntervalSeconds = max(0, minIntervalSeconds)
            self.maxStalenessSeconds = max(60, maxStalenessSeconds)
            self.leadSeconds = max(0, leadSeconds)
        }
    }

    /// A decision and why it was made (shown by `fetchctl`).
    public struct Decision: Sendable, Equatable {
        /// When to fetch.
        public var date: Date
        /// Why: "predicted use Tue 08:55 (p=0.62), lead 2 min", "cold start: every 2 h", ...
        public var reason: String
        /// Set when `date` is a retry after this many failures in a row (the back-off), not a
        /// fetch for a predicted use.
        public var retryAfterFailures: Int?

        /// Creates a decision.
        public init(date: Date, reason: String) {
            self.date = date
            self.reason = reason
        }
    }

    /// Staleness beyond this counts as this much (seconds): a fetch is for the uses it serves soon.
    static let stalenessCapSeconds = 20.0 * 60
    /// Content at most this old at a use is fresh (seconds), as the learning bench scores it.
    public static let freshSeconds = 15.0 * 60
    /// No use for this long (seconds) and the user is away: a day, so that one skipped habit
    /// does not count.
    static let awayAfterSeconds = 86_400.0
    /// While the user is away, fetches at least this far apart (seconds): the budget is not spent
    /// on nobody, while the content stays within a few hours of fresh when they come back
    /// (bench/README.md, "Away pacing", has what it costs and saves on real usage).
    static let awayIntervalSeconds = 3 * 3600.0
    static let horizonBins = 24 * 60 / UsageModel.binMinutes
    static let binSeconds = Double(UsageModel.binMinutes * 60)

    /// The limits in force.
    public var limits: Limits
    /// How uses with no habit are forecast (`fetchctl simulate --policy` compares them).
    public var policy = Policy.learned
    /// The local clock's UTC offset at a moment (the daemon passes its time zone's); nil: the
    /// offset of the latest use, which is what a replayed trace has.
    public var localOffset: (@Sendable (Date) -> Int)?

    /// Creates a planner.
    public init(limits: Limits) { self.limits = limits }

    /// The next fetch after `now`, given the model and the times of recent fetches (oldest first;
    /// the last is the latest content's fetch).
    public func next(now: Date, model: UsageModel, recentFetches: [Date]) -> Decision {
        let last = recentFetches.last
        let floor = earliestAllowed(now: now, recentFetches: recentFetches)
        let ceiling = last.map { $0.addingTimeInterval(limits.maxStalenessSeconds) }
        guard let shaped = forecastToPlan(now: now, model: model) else {
            let interval = max(limits.minIntervalSeconds, 86_400 / Double(limits.budgetPerDay))
            let date = max(floor, last.map { $0.addingTimeInterval(interval) } ?? now)
            return Decision(date: date, reason: "cold start (\(model.daysOfUse) day(s) of use): every \(Self.text(interval))")
        }
        // Only the first planned fetch is made; the rest are not described (a reason per
        // planned fetch was a tenth of a decision's cost).
        let plan = GreedyPlan(limits: limits, shaped: shaped, past: recentFetches, floor: floor, latestUse: model.sessions.last)
            .decisions(now: now, first: 1)
        guard var first = plan.first else {
            let date = max(floor, ceiling ?? now.addingTimeInterval(Double(Self.horizonBins) * Self.binSeconds))
            return Decision(date: date, reason: "no use predicted in the next 24 h: max_staleness")
        }
        if let ceiling, first.date > ceiling {
            return Decision(date: max(floor, ceiling), reason: "max_staleness \(Self.text(limits.maxStalenessSeconds))")
        }
        first.reason = Self.coldStartPrefix(model) + first.reason
        return first
    }

    /// The fetches planned for the next 24 hours, earliest first (what `fetchctl usage` shows);
    /// empty while the plan is a plain interval.
    public func plan(now: Date, model: UsageModel, recentFetches: [Date]) -> [Decision] {
        guard let shaped = forecastToPlan(now: now, model: model) else { return [] }
        let prefix = Self.coldStartPrefix(model)
        return GreedyPlan(limits: limits, shaped: shaped, past: recentFetches,
                          floor: earliestAllowed(now: now, recentFetches: recentFetches), latestUse: model.sessions.last)
            .decisions(now: now).map { Decision(date: $0.date, reason: prefix + $0.reason) }
    }

    /// What a reason starts with when the fetch comes after a day without use.
    static func awayPrefix(_ date: Date, latestUse: Date?) -> String {
        guard let latestUse, date.timeIntervalSince(latestUse) >= awayAfterSeconds else { return "" }
        return "no use for a day: at most every \(text(awayIntervalSeconds)); "
    }

    /// What a reason starts with while the model is not warm (planned on the population's hours).
    static func coldStartPrefix(_ model: UsageModel) -> String {
        model.isWarm ? "" : "cold start (\(model.daysOfUse) day(s) of use, people's usual hours): "
    }

    /// What to plan on: `shapedForecast` once the model is warm; before that, under
    /// `Policy.learned`, the population's hours of use at the user's own rate and the time since
    /// the latest use (`ScatteredUse.forecast`, whose prior carries the first days); nil
    /// for a plain interval (no use seen yet, or another policy).
    func forecastToPlan(now: Date, model: UsageModel) -> (expected: [Double], cost: Cost)? {
        if model.isWarm { return shapedForecast(now: now, model: model) }
        guard policy == .learned, !model.sessions.isEmpty else { return nil }
        return (model.scattered.forecast(from: now, bins: Self.horizonBins, localOffset: localOffset), .scattered)
    }

    /// The earliest moment the floor (`min_interval`) and the rolling budget allow.
    public func earliestAllowed(now: Date, recentFetches: [Date]) -> Date {
        var floor = now
        if let last = recentFetches.last { floor = max(floor, last.addingTimeInterval(limits.minIntervalSeconds)) }
        if let freesAt = Self.budgetFreesAt(recentFetches: recentFetches, perDay: limits.budgetPerDay) {
            floor = max(floor, freesAt)
        }
        return floor
    }

    /// When a rolling 24-hour budget of `perDay` fetches allows the next one, given the
    /// fetches made (oldest first): a day after the oldest one still counted; nil while the
    /// budget is not spent. The one rule for a handler's `budget` and for `global_budget`.
    public static func budgetFreesAt(recentFetches: [Date], perDay: Int) -> Date? {
        guard perDay > 0, recentFetches.count >= perDay else { return nil }
        return recentFetches[recentFetches.count - perDay].addingTimeInterval(86_400)
    }

    /// `Tue 08:55`, local time at `offsetSeconds`.
    static func weekdayAndTime(_ date: Date, offsetSeconds: Int) -> String {
        let local = LocalTime(date, offsetSeconds: offsetSeconds)
        let names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        let hour = local.minuteOfDay / 60, minute = local.minuteOfDay % 60
        return "\(names[local.weekday]) \(hour < 10 ? "0" : "")\(hour):\(minute < 10 ? "0" : "")\(minute)"
    }

    /// `2 h`, `15 min`, `45 s`.
    static func text(_ seconds: Double) -> String {
        if seconds >= 3600, seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600)) h" }
        if seconds >= 60 { return "\(Int((seconds / 60).rounded())) min" }
        return "\(Int(seconds.rounded())) s"
    }
}
