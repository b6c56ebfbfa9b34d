import Foundation

extension UsageModel {
    /// How far back the forecast looks for the part of a habit that has already passed (seconds).
    static let lookbackSeconds = 3 * 3600.0
    /// Expected uses per bin at or under which a bin is background, not part of a habit episode.
    static let backgroundPerBin = 0.004
    /// An episode with at most this many expected uses is taken as one use (a habit); more is a
    /// stretch of uses with no single one to wait for.
    static let singleUseMass = 1.5
    /// A use this long before an episode starts is its use, come early (seconds); an episode
    /// starting later than this from now is not touched.
    static let episodeReachSeconds = 3600.0
    /// What is left of an episode once its use came, as a share of what the profile expects.
    static let consumedShare = 0.25
    /// The most of an episode's expected use counted as missed so far: a skipped day is not a
    /// use certain to come, so the rest of an episode is at most 4 times likelier.
    static let missedCap = 0.75
    /// The window after a use in which a follow-up counts (seconds after the use).
    static let followUpWindowSeconds = 600.0..<3600.0

    /// Expected uses in each 5-minute bin from `start` for `bins` bins, in local time: the UTC
    /// offset `localOffset` gives for each bin (the daemon's time zone, so a daylight-saving change
    /// ahead moves the habit with the clock), else the offset of the latest use (a trace).
    public func forecast(from start: Date, bins: Int, localOffset: (@Sendable (Date) -> Int)? = nil) -> [Double] {
        let profile = adaptedProfile(at: start)
        let lastOffset = sessions.last?.utcOffsetSeconds ?? 0
        let binSeconds = Double(Self.binMinutes * 60)
        let lookback = Int(Self.lookbackSeconds / binSeconds)
        // Bins -lookback..<bins: the recent past too, for the "not used yet" update below.
        let expected = (-lookback..<bins).map { index -> Double in
            let date = start.addingTimeInterval(Double(index) * binSeconds)
            let local = LocalTime(date, offsetSeconds: localOffset?(date) ?? lastOffset)
            return profile[local.weekday][local.minuteOfDay / Self.binMinutes]
        }
        let lastUse = sessions.last.map { $0.date.timeIntervalSince(start) } ?? -.infinity
        var result = Array(expected[lookback...])
        // Habits come in episodes (a run of bins above the background level). For an episode that
        // is under way, with about one use in it: if its use happened, what is left of it is not
        // expected again (the budget goes to the uses still to come); if not, it is likelier in
        // what is left (Bayes: the density of a use not yet seen over the chance it is still to
        // come), so fetching goes on through a late use instead of stopping at the peak.
        var index = 0
        while index < expected.count {
            guard expected[index] > Self.backgroundPerBin else { index += 1; continue }
            let first = index
            while index < expected.count && expected[index] > Self.backgroundPerBin { index += 1 }
            let start = Double(first - lookback) * binSeconds, end = Double(index - lookback) * binSeconds
            // Only an episode under way or about to start, with about one use in it.
            guard end > 0, start < Self.episodeReachSeconds,
                  expected[first..<index].reduce(0, +) <= Self.singleUseMass else { continue }
            let factor: Double
            if lastUse >= start - Self.episodeReachSeconds {
                factor = Self.consumedShare  // its use came (early or in it)
            } else {
                factor = 1 / (1 - min(Self.missedCap, expected[first..<max(first, min(index, lookback))].reduce(0, +)))
            }
            for bin in max(first, lookback)..<index { result[bin - lookback] *= factor }
        }
        // After a recent use, its likely follow-up, spread over the next hour. (Counting only what
        // it adds to the profile's own rate there served users without follow-ups a little and
        // bursty users much worse: kept whole.)
        let follow = Self.followUpWindowSeconds
        let followFrom = lastUse.isFinite ? max(0, Int(((lastUse + follow.lowerBound) / binSeconds).rounded(.up))) : 0
        let followTo = lastUse.isFinite ? min(result.count, Int(((lastUse + follow.upperBound) / binSeconds).rounded(.up))) : 0
        if followFrom < followTo {
            for bin in followFrom..<followTo { result[bin] += followUpShare / Double(followTo - followFrom) }
        }
        return result
    }
}
