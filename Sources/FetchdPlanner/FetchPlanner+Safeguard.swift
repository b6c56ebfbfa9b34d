import Foundation

extension FetchPlanner {
    /// What the plan gave the user over their own recent past, beside what a fixed interval with
    /// as many fetches would have given them: the evidence the safeguard acts on.
    public struct TrackRecord: Sendable, Equatable {
        /// Uses (sessions) on the plan's days of the window, after its first fetch.
        public var uses = 0
        /// Of those, the uses at most `freshSeconds` after the latest fetch before them.
        public var freshUses = 0
        /// The uses a fixed interval with as many fetches over the same stretch would have served
        /// fresh, on average over its phase: `uses` × `freshSeconds` / the interval.
        public var intervalFreshUses = 0.0

        /// No track record: nothing to act on.
        public init() {}

        /// The record of `sessions` against `freshFetches` (when the content became fresh:
        /// successful fetches, oldest first) over the `trackRecordSeconds` before `now`, leaving
        /// out the uses of the local days `skipping` names (the days a fixed interval served:
        /// counting them would measure the interval, not the plan).
        public init(sessions: [UsageEvent], freshFetches: [Date], now: Date, skipping: (Int) -> Bool = { _ in false }) {
            let from = now.addingTimeInterval(-FetchPlanner.trackRecordSeconds)
            let fetches = freshFetches.drop { $0 < from }.prefix { $0 < now }
            guard let first = fetches.first else { return }
            var staleness: [Double] = []
            var next = fetches.startIndex, latest = first
            for session in sessions where session.date >= first && session.date < now {
                while next < fetches.endIndex, fetches[next] <= session.date {
                    latest = fetches[next]
                    next += 1
                }
                guard !skipping(LocalTime(session.date, offsetSeconds: session.utcOffsetSeconds).dayNumber) else { continue }
                staleness.append(session.date.timeIntervalSince(latest))
            }
            guard !staleness.isEmpty else { return }
            let interval = now.timeIntervalSince(first) / Double(fetches.count)
            uses = staleness.count
            freshUses = staleness.reduce(0) { $1 <= FetchPlanner.freshSeconds ? $0 + 1 : $0 }
            intervalFreshUses = Double(uses) * min(1, FetchPlanner.freshSeconds / interval)
        }
    }

    /// How far back the safeguard looks, in seconds: the model's memory (eight weeks), so that
    /// the plan's own days (a quarter of them) of a person with three uses a day hold some five
    /// uses an interval would serve fresh.
    /// The daemon keeps `Defaults.historyKeepPerHandler` results a handler: above about 17
    /// fetches a day its record is shorter.
    public static let trackRecordSeconds = 56 * 86_400.0

    /// From when a caller deciding at `now` passes the successful fetches
    /// (`Feedback.freshFetches`): the record ends at today's local midnight, so a day more than
    /// `trackRecordSeconds` covers it whatever the time of day.
    public static func trackRecordStart(now: Date) -> Date { now.addingTimeInterval(-trackRecordSeconds - 86_400) }
    /// The plan must beat the interval by this share before the safeguard leaves it alone: a
    /// schedule that only equals the interval on the recent past may be behind it by chance.
    static let safeguardMargin = 0.1
    /// The shortfall, in standard deviations of the interval's count of uses fresh, below which
    /// the safeguard does nothing: fewer uses fresh than an interval's by chance alone is common,
    /// and acting on chance cost the real traces gain (bench/README.md, "The safeguard").
    static let safeguardLeastSigmas = 1.0
    /// The share of days moved to the interval per standard deviation beyond that.
    static let safeguardSharePerSigma = 0.5
    /// The most of the days the interval takes: the rest stay the plan's, to see whether it has
    /// recovered.
    static let mostIntervalShare = 0.75

    /// The share of days given to a fixed interval (0: the model's plan every day, 1: the
    /// interval every day): none while the plan served the recent past's uses fresh at least as
    /// often as an interval would have (with `safeguardMargin` to spare, give or take chance),
    /// more the further it fell short. Uses fresh count as a Poisson count: its standard
    /// deviation is the root of the interval's expected count.
    static func intervalShare(_ record: TrackRecord) -> Double {
        guard record.uses > 0, record.intervalFreshUses > 0 else { return 0 }
        // No more than every use: with a fetch every 15 minutes the interval serves them all.
        let wanted = min(Double(record.uses), record.intervalFreshUses * (1 + safeguardMargin))
        let sigmas = (wanted - Double(record.freshUses)) / wanted.squareRoot()
        return min(1, max(0, safeguardSharePerSigma * (sigmas - safeguardLeastSigmas)))
    }

    /// The safeguard's share of days for the local day starting at `dayStart`, and the record
    /// that asked for it: the record up to that midnight (so the share holds all day) of the
    /// days the interval never takes (the plan's own days: it may have recovered, and only its
    /// days can tell). Those days are fixed by the day alone, not by how the plan did on them, so
    /// leaving the others out picks no lucky or unlucky days.
    static func safeguard(sessions: [UsageEvent], freshFetches: [Date], dayStart: Date) -> (share: Double, record: TrackRecord) {
        let record = TrackRecord(sessions: sessions, freshFetches: freshFetches, now: dayStart) {
            isIntervalDay($0, share: mostIntervalShare)
        }
        return (min(mostIntervalShare, intervalShare(record)), record)
    }

    /// Whether the local day `day` is one of the `share` of days given to the fixed interval.
    /// The days are spread evenly by the golden-ratio sequence (any run of days holds close to
    /// `share` of interval days), and a day with a higher share keeps every interval day of a
    /// lower one.
    static func isIntervalDay(_ day: Int, share: Double) -> Bool {
        guard share > 0 else { return false }
        let golden = 0.618_033_988_749_894_8
        let position = (Double(day) * golden).truncatingRemainder(dividingBy: 1)
        return (position < 0 ? position + 1 : position) < share
    }

    /// The next tick of a fixed interval of `perDay` fetches a day after `now`, and at least half
    /// an interval after the latest fetch (a wake that ran it a little early must not fetch
    /// again at the tick). The ticks fall on multiples of the interval since the epoch, so they
    /// do not move from one decision to the next.
    static func intervalTick(perDay: Int, now: Date, latest: Date?) -> Date {
        let interval = 86_400 / Double(max(1, perDay))
        let after = max(now.timeIntervalSince1970, (latest?.timeIntervalSince1970 ?? -.infinity) + interval / 2)
        return Date(timeIntervalSince1970: ((after / interval).rounded(.down) + 1) * interval)
    }

    /// `decision` (the plan's) on the safeguard's days replaced by the fixed interval's next tick;
    /// on the plan's days, brought forward to the first tick of a later interval day it would
    /// pass. The share is the one found at the local midnight that starts today.
    func safeguarded(_ decision: Decision, now: Date, model: UsageModel, recentFetches: [Date], feedback: Feedback) -> Decision {
        guard model.isWarm, !feedback.freshFetches.isEmpty else { return decision }
        let offset = { (date: Date) in self.localOffset?(date) ?? model.sessions.last?.utcOffsetSeconds ?? 0 }
        let today = LocalTime(now, offsetSeconds: offset(now)).dayNumber
        let midnight = { (day: Int) in Date(timeIntervalSince1970: Double(day * 86_400 - offset(now))) }
        let (share, record) = Self.safeguard(sessions: model.sessions, freshFetches: feedback.freshFetches,
                                             dayStart: midnight(today))
        guard share > 0 else { return decision }
        let perDay = limits.budgetPerDay
        let floor = earliestAllowed(now: now, recentFetches: Array(recentFetches.suffix(perDay)))
        let why = "\(Int((share * 100).rounded())) % of days (\(record.freshUses) of \(record.uses) uses fresh in "
            + "8 weeks, an interval: \(Int(record.intervalFreshUses.rounded())))"
        let day = { (date: Date) in LocalTime(date, offsetSeconds: offset(date)).dayNumber }
        if Self.isIntervalDay(today, share: share) {
            let tick = Self.intervalTick(perDay: perDay, now: now, latest: recentFetches.last)
            guard day(tick) != today, !Self.isIntervalDay(day(tick), share: share) else {
                return Decision(date: max(floor, tick), reason: "safeguard: a fixed interval on " + why)
            }
            // The next tick falls on a day of the plan: the plan's decision, from that day on.
            return Decision(date: max(floor, decision.date, midnight(today + 1)), reason: decision.reason)
        }
        // A plan's decision days ahead (max_staleness) stops at the first interval day on the way.
        let last = day(decision.date)
        guard last > today, let next = (today + 1...last).first(where: { Self.isIntervalDay($0, share: share) }) else {
            return Decision(date: decision.date,
                            reason: decision.reason + "; safeguard: the plan's day, a fixed interval on " + why)
        }
        let tick = Self.intervalTick(perDay: perDay, now: midnight(next).addingTimeInterval(-1), latest: recentFetches.last)
        guard tick < decision.date else { return decision }
        return Decision(date: max(floor, tick), reason: "safeguard: a fixed interval on " + why)
    }
}
