import Foundation

extension UsageModel {
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
        let risk = gapRisk(profile: scatteredProfile(at: now), at: now)
        let ends = Self.gapClassesMinutes.dropFirst() + [Self.gapRiskSpanMinutes]
        return zip(zip(Self.gapClassesMinutes, ends), risk).map { (Int($0.0.0), Int($0.0.1), $0.1) }
    }

    /// The class of a time since the latest use, nil past a day (or before the use).
    static func gapClass(minutes: Double) -> Int? {
        guard minutes >= 0, minutes < gapRiskSpanMinutes else { return nil }
        return gapClassesMinutes.lastIndex { $0 <= minutes }
    }

    /// How much likelier the next use is, for each class of time since the latest use, than
    /// `profile` (per kind of day, as `scatteredProfile` gives it) says: for each past pair of
    /// consecutive sessions, the uses the profile expected in each class while the next one
    /// had not come, against the class the next one came in (recent pairs weigh more, as in the
    /// profile). Real sessions cluster: another often follows within an hour or two, and fewer
    /// come in the hours after that; a forecast from the time of day alone misses both.
    public func gapRisk(profile: [[Double]], at now: Date) -> [Double] {
        let classes = Self.gapClassesMinutes.count, perDay = Self.binsPerDay
        // The profile over eight days from Monday 00:00, and its prefix sums: the expected uses
        // in any stretch of up to a day, from any bin of the week, in O(1).
        var prefix = [0.0]
        prefix.reserveCapacity(8 * perDay + 1)
        for index in 0..<(8 * perDay) {
            let weekday = (index / perDay) % 7
            prefix.append(prefix[index] + profile[weekday >= 5 ? 1 : 0][index % perDay])
        }
        let classBins = (Self.gapClassesMinutes + [Self.gapRiskSpanMinutes]).map { Int($0) / Self.binMinutes }
        var seen = Array(repeating: 0.0, count: classes), expected = Array(repeating: 0.0, count: classes)
        for (from, to) in zip(sessions, sessions.dropFirst()) {
            let w = decay(to.date, at: now, halfLifeDays: Self.scatteredHalfLifeDays)
            let local = LocalTime(from.date, offsetSeconds: from.utcOffsetSeconds)
            let startBin = local.weekday * perDay + local.minuteOfDay / Self.binMinutes
            let gapMinutes = to.date.timeIntervalSince(from.date) / 60
            // Bins from the use's own bin on, as many as 5-minute steps reach the next use (or the
            // end of the span), were at risk: `scatteredForecast` classes its bins by their middle
            // instead, which agrees with this on average.
            let atRisk = Int((min(gapMinutes, Self.gapRiskSpanMinutes) / Double(Self.binMinutes)).rounded(.up))
            for index in 0..<classes where classBins[index] < atRisk {
                let end = min(classBins[index + 1], atRisk)
                expected[index] += w * (prefix[startBin + end] - prefix[startBin + classBins[index]])
            }
            if let index = Self.gapClass(minutes: gapMinutes) { seen[index] += w }
        }
        let prior = Self.gapRiskPriorUses
        return (0..<classes).map { (seen[$0] + prior * PopulationPrior.gapRisk[$0]) / (expected[$0] + prior) }
    }
}
