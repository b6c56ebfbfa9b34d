import Foundation

extension UsageModel {
    /// Events this old weigh half in the scattered-use forecast, in days. Real usage with no
    /// habit is thin (one to five sessions a day): a month of it says more about the hours of use
    /// than the last week does, while it still follows a drift within weeks.
    static let scatteredHalfLifeDays = 30.0
    /// The spread of one use in the scattered-use profile, in bins (3 minutes): people come back
    /// to the same minutes of the day (a train, a meeting's end) more often than a wider kernel
    /// shows, and a fetch serves only the 15 minutes after it.
    static let scatteredKernelBins = 0.6
    /// The share of the profile taken from the same kind of day (weekdays, weekend); the rest
    /// from every day pooled, which is steadier while weekends are few.
    static let scatteredKindShare = 0.5
    /// The population's hours of use (`PopulationPrior`) count as this many days of the user's
    /// own, at the user's own rate of use: they shape the first days, and fade as days add up.
    static let scatteredPriorDays = 0.3

    /// For uses with no habit to wait for: expected uses per 5-minute bin on one day of each
    /// kind (0: weekdays, 1: weekend), over a long memory.
    func scatteredProfile(at now: Date) -> [[Double]] {
        let count = Self.binsPerDay
        guard !sessions.isEmpty else { return Array(repeating: Array(repeating: 0, count: count), count: 2) }
        let binsPerHour = count / 24
        let weight = { (date: Date) in decay(date, at: now, halfLifeDays: Self.scatteredHalfLifeDays) }
        var byKind = Array(repeating: Array(repeating: 0.0, count: count), count: 2)
        var pooled = Array(repeating: 0.0, count: count)
        let kernel = Self.gaussianKernel(sdBins: Self.scatteredKernelBins)
        for session in sessions {
            let local = LocalTime(session.date, offsetSeconds: session.utcOffsetSeconds)
            let w = weight(session.date), bin = local.minuteOfDay / Self.binMinutes
            for (offset, share) in kernel {
                let spread = (bin + offset + count) % count
                byKind[local.weekday >= 5 ? 1 : 0][spread] += w * share
                pooled[spread] += w * share
            }
        }
        // Per day observed (decayed), whether or not the day had a use.
        let byWeekday = decayedDaysByWeekday(at: now, halfLifeDays: Self.scatteredHalfLifeDays)
        let days = [byWeekday[0..<5].reduce(0, +), byWeekday[5..<7].reduce(0, +)]
        let allDays = days[0] + days[1]
        // The prior: the population's share of each hour, at this user's uses per day (itself
        // shrunk toward the population's while few days are known).
        let priorDays = Self.scatteredPriorDays
        let perDay = (pooled.reduce(0, +) + priorDays * PopulationPrior.usesPerDay) / (allDays + priorDays)
        let prior = (0..<2).map { kind in
            (0..<count).map { perDay * PopulationPrior.hourShare[kind][$0 / binsPerHour] / Double(binsPerHour) }
        }
        return (0..<2).map { kind in
            (0..<count).map { bin in
                let priorAll = (5 * prior[0][bin] + 2 * prior[1][bin]) / 7
                let all = (pooled[bin] + priorDays * priorAll) / (allDays + priorDays)
                let own = (byKind[kind][bin] + priorDays * prior[kind][bin]) / (days[kind] + priorDays)
                return Self.scatteredKindShare * own + (1 - Self.scatteredKindShare) * all
            }
        }
    }

    /// Expected uses per 5-minute bin from `start` for `bins` bins for uses with no habit: the
    /// scattered profile, times the learned risk of a use by the time since the latest one
    /// (`gapRisk`) unless `withGapRisk` is false. Local time as in `forecast`.
    public func scatteredForecast(from start: Date, bins: Int, localOffset: (@Sendable (Date) -> Int)? = nil,
                                  withGapRisk: Bool = true) -> [Double] {
        guard let latest = sessions.last else { return Array(repeating: 0, count: bins) }
        let profile = scatteredProfile(at: start)
        let risk = withGapRisk ? gapRisk(profile: profile, at: start)
            : Array(repeating: 1, count: Self.gapClassesMinutes.count)
        let binSeconds = Double(Self.binMinutes * 60)
        let sinceLatest = start.timeIntervalSince(latest.date)
        return (0..<bins).map { index in
            let date = start.addingTimeInterval(Double(index) * binSeconds)
            let local = LocalTime(date, offsetSeconds: localOffset?(date) ?? latest.utcOffsetSeconds)
            let value = profile[local.weekday >= 5 ? 1 : 0][local.minuteOfDay / Self.binMinutes]
            let gapMinutes = (sinceLatest + (Double(index) + 0.5) * binSeconds) / 60
            return value * (Self.gapClass(minutes: gapMinutes).map { risk[$0] } ?? 1)
        }
    }

    /// A normal kernel over whole bins, `sdBins` wide, summing to 1 (three sd each side).
    static func gaussianKernel(sdBins: Double) -> [(offset: Int, weight: Double)] {
        let reach = Int((3 * sdBins).rounded(.up))
        let raw = (-reach...reach).map { (offset: $0, weight: exp(-Double($0 * $0) / (2 * sdBins * sdBins))) }
        let total = raw.reduce(0) { $0 + $1.weight }
        return raw.map { ($0.offset, $0.weight / total) }
    }
}
