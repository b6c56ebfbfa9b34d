import Foundation

/// The safeguard: where the plan served the user's own recent uses worse than a fixed interval
/// with as many fetches would have, some days follow that interval instead
/// (`FetchPlanner.safeguarded`). Here: how many days, which ones, and the interval's ticks.
enum Safeguard {
    /// The plan must beat the interval by this share before the safeguard leaves it alone: a
    /// schedule that only equals the interval on the recent past may be behind it by chance.
    static let margin = 0.1
    /// The shortfall, in standard deviations of the interval's count of uses fresh, below which
    /// the safeguard does nothing: fewer uses fresh than an interval's by chance alone is common,
    /// and acting on chance cost the real traces gain (bench/README.md, "The safeguard").
    static let leastSigmas = 1.0
    /// The share of days moved to the interval per standard deviation beyond that.
    static let sharePerSigma = 0.5
    /// The most of the days the interval takes: the rest stay the plan's, to see whether it has
    /// recovered.
    static let mostIntervalShare = 0.75

    /// The share of days given to a fixed interval (0: the model's plan every day, 1: the
    /// interval every day): none while the plan served the recent past's uses fresh at least as
    /// often as an interval would have (with `margin` to spare, give or take chance),
    /// more the further it fell short. Uses fresh count as a Poisson count: its standard
    /// deviation is the root of the interval's expected count.
    static func intervalShare(_ record: TrackRecord) -> Double {
        guard record.uses > 0, record.intervalFreshUses > 0 else { return 0 }
        // No more than every use: with a fetch every 15 minutes the interval serves them all.
        let wanted = min(Double(record.uses), record.intervalFreshUses * (1 + margin))
        let sigmas = (wanted - Double(record.freshUses)) / wanted.squareRoot()
        return min(1, max(0, sharePerSigma * (sigmas - leastSigmas)))
    }

    /// The safeguard's share of days for the local day starting at `dayStart`, and the record
    /// that asked for it: the record up to that midnight (so the share holds all day) of the
    /// days the interval never takes (the plan's own days: it may have recovered, and only its
    /// days can tell). Those days are fixed by the day alone, not by how the plan did on them, so
    /// leaving the others out picks no lucky or unlucky days.
    static func share(sessions: [UsageEvent], freshFetches: [Date], dayStart: Date) -> (share: Double, record: TrackRecord) {
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
}
