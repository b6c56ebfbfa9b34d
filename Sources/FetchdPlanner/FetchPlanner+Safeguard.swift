import Foundation

extension FetchPlanner {
    /// What the plan gave the user over their own recent past, beside what a fixed interval with
    /// as many fetches would have given them: the evidence the safeguard acts on.
    public struct TrackRecord: Sendable, Equatable {
        /// Uses (sessions) in the window after its first fetch.
        public var uses = 0
        /// Of those, the uses at most `freshSeconds` after the latest fetch before them.
        public var freshUses = 0
        /// The uses a fixed interval with as many fetches over the same stretch would have served
        /// fresh, on average over its phase: `uses` × `freshSeconds` / the interval.
        public var intervalFreshUses = 0.0

        /// No track record: nothing to act on.
        public init() {}

        /// The record of `sessions` against `freshFetches` (when the content became fresh:
        /// successful fetches, oldest first) over the `trackRecordSeconds` before `now`.
        public init(sessions: [UsageEvent], freshFetches: [Date], now: Date) {
            let from = now.addingTimeInterval(-FetchPlanner.trackRecordSeconds)
            let fetches = freshFetches.drop { $0 < from }
            guard let first = fetches.first, first < now else { return }
            var staleness: [Double] = []
            var next = fetches.startIndex, latest = first
            for session in sessions where session.date >= first && session.date <= now {
                while next < fetches.endIndex, fetches[next] <= session.date {
                    latest = fetches[next]
                    next += 1
                }
                staleness.append(session.date.timeIntervalSince(latest))
            }
            guard !staleness.isEmpty else { return }
            let interval = now.timeIntervalSince(first) / Double(fetches.reduce(0) { $1 <= now ? $0 + 1 : $0 })
            uses = staleness.count
            freshUses = staleness.reduce(0) { $1 <= FetchPlanner.freshSeconds ? $0 + 1 : $0 }
            intervalFreshUses = Double(uses) * min(1, FetchPlanner.freshSeconds / interval)
        }
    }

    /// How far back the safeguard looks, in seconds: four weeks, long enough that a person with
    /// three uses a day gives it some eighty of them.
    public static let trackRecordSeconds = 28 * 86_400.0
    /// The plan must beat the interval by this share before the safeguard leaves it alone: a
    /// schedule that only equals the interval on the recent past may be behind it by chance.
    static let safeguardMargin = 0.1
    /// The shortfall, in standard deviations of the interval's count of uses fresh, below which
    /// the safeguard does nothing: fewer uses fresh than an interval's by chance alone is common
    /// (four weeks hold some ten such uses), and acting on chance cost the real traces gain
    /// (bench/README.md, "The safeguard").
    static let safeguardLeastSigmas = 1.0
    /// The share of days moved to the interval per standard deviation beyond that: all of them at
    /// three.
    static let safeguardSharePerSigma = 0.5

    /// The share of days given to a fixed interval (0: the model's plan every day, 1: the
    /// interval every day): none while the plan served the recent past's uses fresh at least as
    /// often as an interval would have (with `safeguardMargin` to spare, give or take chance),
    /// more the further it fell short. Uses fresh count as a Poisson count: its standard
    /// deviation is the root of the interval's expected count.
    static func intervalShare(_ record: TrackRecord) -> Double {
        guard record.uses > 0, record.intervalFreshUses > 0 else { return 0 }
        let wanted = record.intervalFreshUses * (1 + safeguardMargin)
        let sigmas = (wanted - Double(record.freshUses)) / wanted.squareRoot()
        return min(1, max(0, safeguardSharePerSigma * (sigmas - safeguardLeastSigmas)))
    }

    /// Whether the local day `day` is one of the `share` of days given to the fixed interval.
    /// The days are spread evenly by the golden-ratio sequence (any run of days holds close to
    /// `share` of interval days), and whole: within a day, the plan and the interval never
    /// compete for the same budget.
    static func isIntervalDay(_ day: Int, share: Double) -> Bool {
        guard share > 0 else { return false }
        let golden = 0.618_033_988_749_894_8
        let position = (Double(day) * golden).truncatingRemainder(dividingBy: 1)
        return (position < 0 ? position + 1 : position) < share
    }

    /// The next tick after `now` of a fixed interval of `perDay` fetches a day. The ticks fall on
    /// multiples of the interval since the epoch, so they do not move from one decision to the next.
    static func intervalTick(perDay: Int, now: Date) -> Date {
        let interval = 86_400 / Double(max(1, perDay))
        return Date(timeIntervalSince1970: ((now.timeIntervalSince1970 / interval).rounded(.down) + 1) * interval)
    }
}
