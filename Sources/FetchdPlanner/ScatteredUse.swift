import Foundation

/// For uses with no habit to wait for: a profile of the hours of use over a long memory, shaped
/// by the population's hours while days are few, times the learned risk of the next use by the
/// time since the latest one (real sessions cluster). The planner's forecast for handlers whose
/// uses are scattered (`FetchPlanner.Cost.scattered`).
public struct ScatteredUse: Sendable {
    /// The uses it learns from.
    public let model: UsageModel

    /// The scattered-use view of `model`'s sessions.
    public init(_ model: UsageModel) { self.model = model }

    /// The classes of time since the latest use (their lower ends, in minutes) within which the
    /// risk of the next use is learned; the last ends at a day. Quarter hours while follow-ups
    /// are likeliest (a fetch serves the 15 minutes after it), wider after. The first half hour
    /// is a class of its own: the corpus the population's risk comes from counts uses less than
    /// 30 minutes apart as one session, so it says nothing about them (prior 1 there).
    public static let gapClassesMinutes: [Double] = [0, 30, 45, 60, 75, 90, 105, 120, 150, 180, 240, 360, 480, 720]
    /// The risk is learned over this long after a use, in minutes.
    static let gapRiskSpanMinutes = 1440.0
    /// Each class starts at the population's risk (`PopulationPrior.gapRisk`) as if this many
    /// uses had been expected there: a class with little evidence stays near it.
    static let gapRiskPriorUses = 1.0

    /// `gapRisk` against this model's own scattered-use profile at `now`, with each class's
    /// span in minutes (what `fetchctl usage` shows).
    public func learnedGapRisk(at now: Date) -> [(fromMinutes: Int, toMinutes: Int, risk: Double)] {
        let risk = gapRisk(profile: profile(at: now), at: now)
        let ends = Self.gapClassesMinutes.dropFirst() + [Self.gapRiskSpanMinutes]
        return zip(zip(Self.gapClassesMinutes, ends), risk).map { (Int($0.0.0), Int($0.0.1), $0.1) }
    }

    /// The class of a time since the latest use, nil past a day (or before the use).
    static func gapClass(minutes: Double) -> Int? {
        guard minutes >= 0, minutes < gapRiskSpanMinutes else { return nil }
        return gapClassesMinutes.lastIndex { $0 <= minutes }
    }

    /// How much likelier the next use is, for each class of time since the latest use, than
    /// `profile` (per kind of day, as `profile` gives it) says: for each past pair of
    /// consecutive model.sessions, the uses the profile expected in each class while the next one
    /// had not come, against the class the next one came in (recent pairs weigh more, as in the
    /// profile). Real model.sessions cluster: another often follows within an hour or two, and fewer
    /// come in the hours after that; a forecast from the time of day alone misses both.
    public func gapRisk(profile: [[Double]], at now: Date) -> [Double] {
        let classes = Self.gapClassesMinutes.count, perDay = UsageModel.binsPerDay
        // The profile over eight days from Monday 00:00, and its prefix sums: the expected uses
        // in any stretch of up to a day, from any bin of the week, in O(1).
        var prefix = [0.0]
        prefix.reserveCapacity(8 * perDay + 1)
        for index in 0..<(8 * perDay) {
            let weekday = (index / perDay) % 7
            prefix.append(prefix[index] + profile[weekday >= 5 ? 1 : 0][index % perDay])
        }
        let classBins = (Self.gapClassesMinutes + [Self.gapRiskSpanMinutes]).map { Int($0) / UsageModel.binMinutes }
        var seen = Array(repeating: 0.0, count: classes), expected = Array(repeating: 0.0, count: classes)
        for (from, to) in zip(model.sessions, model.sessions.dropFirst()) {
            let w = model.decay(to.date, at: now, halfLifeDays: Self.halfLifeDays)
            let local = LocalTime(from.date, offsetSeconds: from.utcOffsetSeconds)
            let startBin = local.weekday * perDay + local.minuteOfDay / UsageModel.binMinutes
            let gapMinutes = to.date.timeIntervalSince(from.date) / 60
            // Bins from the use's own bin on, as many as 5-minute steps reach the next use (or the
            // end of the span), were at risk: `forecast` classes its bins by their middle
            // instead, which agrees with this on average.
            let atRisk = Int((min(gapMinutes, Self.gapRiskSpanMinutes) / Double(UsageModel.binMinutes)).rounded(.up))
            for index in 0..<classes where classBins[index] < atRisk {
                let end = min(classBins[index + 1], atRisk)
                expected[index] += w * (prefix[startBin + end] - prefix[startBin + classBins[index]])
            }
            if let index = Self.gapClass(minutes: gapMinutes) { seen[index] += w }
        }
        let prior = Self.gapRiskPriorUses
        return (0..<classes).map { (seen[$0] + prior * PopulationPrior.gapRisk[$0]) / (expected[$0] + prior) }
    }


    /// Events this old weigh half in the scattered-use forecast, in days. Real usage with no
    /// habit is thin (one to five model.sessions a day): a month of it says more about the hours of use
    /// than the last week does, while it still follows a drift within weeks.
    static let halfLifeDays = 30.0
    /// The spread of one use in the scattered-use profile, in bins (3 minutes): people come back
    /// to the same minutes of the day (a train, a meeting's end) more often than a wider kernel
    /// shows, and a fetch serves only the 15 minutes after it.
    static let kernelBins = 0.6
    /// The share of the profile taken from the same kind of day (weekdays, weekend); the rest
    /// from every day pooled, which is steadier while weekends are few.
    static let kindShare = 0.5
    /// The population's hours of use (`PopulationPrior`) count as this many days of the user's
    /// own, at the user's own rate of use: they shape the first days, and fade as days add up.
    static let priorDays = 0.3

    /// For uses with no habit to wait for: expected uses per 5-minute bin on one day of each
    /// kind (0: weekdays, 1: weekend), over a long memory.
    func profile(at now: Date) -> [[Double]] {
        let count = UsageModel.binsPerDay
        guard !model.sessions.isEmpty else { return Array(repeating: Array(repeating: 0, count: count), count: 2) }
        let binsPerHour = count / 24
        let weight = { (date: Date) in model.decay(date, at: now, halfLifeDays: Self.halfLifeDays) }
        var byKind = Array(repeating: Array(repeating: 0.0, count: count), count: 2)
        var pooled = Array(repeating: 0.0, count: count)
        let kernel = UsageModel.gaussianKernel(sdBins: Self.kernelBins)
        for session in model.sessions {
            let local = LocalTime(session.date, offsetSeconds: session.utcOffsetSeconds)
            let w = weight(session.date), bin = local.minuteOfDay / UsageModel.binMinutes
            for (offset, share) in kernel {
                let spread = (bin + offset + count) % count
                byKind[local.weekday >= 5 ? 1 : 0][spread] += w * share
                pooled[spread] += w * share
            }
        }
        // Per day observed (decayed), whether or not the day had a use.
        let byWeekday = model.decayedDaysByWeekday(at: now, halfLifeDays: Self.halfLifeDays)
        let days = [byWeekday[0..<5].reduce(0, +), byWeekday[5..<7].reduce(0, +)]
        let allDays = days[0] + days[1]
        // The prior: the population's share of each hour, at this user's uses per day (itself
        // shrunk toward the population's while few days are known).
        let priorDays = Self.priorDays
        let perDay = (pooled.reduce(0, +) + priorDays * PopulationPrior.usesPerDay) / (allDays + priorDays)
        let prior = (0..<2).map { kind in
            (0..<count).map { perDay * PopulationPrior.hourShare[kind][$0 / binsPerHour] / Double(binsPerHour) }
        }
        return (0..<2).map { kind in
            (0..<count).map { bin in
                let priorAll = (5 * prior[0][bin] + 2 * prior[1][bin]) / 7
                let all = (pooled[bin] + priorDays * priorAll) / (allDays + priorDays)
                let own = (byKind[kind][bin] + priorDays * prior[kind][bin]) / (days[kind] + priorDays)
                return Self.kindShare * own + (1 - Self.kindShare) * all
            }
        }
    }

    /// Expected uses per 5-minute bin from `start` for `bins` bins for uses with no habit: the
    /// scattered profile, times the learned risk of a use by the time since the latest one
    /// (`gapRisk`) unless `withGapRisk` is false. Local time as in `UsageModel.forecast`.
    public func forecast(from start: Date, bins: Int, localOffset: (@Sendable (Date) -> Int)? = nil,
                         withGapRisk: Bool = true) -> [Double] {
        guard let latest = model.sessions.last else { return Array(repeating: 0, count: bins) }
        let profile = profile(at: start)
        let risk = withGapRisk ? gapRisk(profile: profile, at: start)
            : Array(repeating: 1, count: Self.gapClassesMinutes.count)
        let binSeconds = Double(UsageModel.binMinutes * 60)
        let sinceLatest = start.timeIntervalSince(latest.date)
        return (0..<bins).map { index in
            let date = start.addingTimeInterval(Double(index) * binSeconds)
            let local = LocalTime(date, offsetSeconds: localOffset?(date) ?? latest.utcOffsetSeconds)
            let value = profile[local.weekday >= 5 ? 1 : 0][local.minuteOfDay / UsageModel.binMinutes]
            let gapMinutes = (sinceLatest + (Double(index) + 0.5) * binSeconds) / 60
            return value * (Self.gapClass(minutes: gapMinutes).map { risk[$0] } ?? 1)
        }
    }
}
