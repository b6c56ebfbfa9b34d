import Foundation

extension UsageModel {
    /// The classes of time since the latest use (their lower ends, in minutes) within which the
    /// risk of the next use is learned; the last ends at a day. Quarter hours while follow-ups
    /// are likeliest (a fetch serves the 15 minutes after it), wider after.
    public static let gapClassesMinutes: [Double] = [0, 45, 60, 75, 90, 105, 120, 150, 180, 240, 360, 480, 720]
    /// The risk is learned over this long after a use, in minutes.
    static let gapRiskSpanMinutes = 1440.0
    /// Each class starts at a risk of 1 as if this many uses had been expected and seen there:
    /// a class with little evidence stays near "as the time of day says".
    static let gapRiskPriorUses = 1.0

    /// The class of a time since the latest use, nil past a day (or before the use).
    static func gapClass(minutes: Double) -> Int? {
        guard minutes >= 0, minutes < gapRiskSpanMinutes else { return nil }
        return gapClassesMinutes.lastIndex { $0 <= minutes }
    }

    /// How much likelier the next use is, for each class of time since the latest use, than
    /// `profile` (per kind of day, as `scatteredProfile` gives it) says: for each past pair of
    /// consecutive sessions, the uses the profile expected in each class while the next one
    /// had not come, against the class the next one came in (recent pairs weigh more, as in the
    /// profile). Real sessions cluster: another often follows within an hour or two, and a day
    /// without use is often followed by more; a forecast from the time of day alone misses both.
    public func gapRisk(profile: [[Double]], at now: Date) -> [Double] {
        let classes = Self.gapClassesMinutes.count, perDay = Self.binsPerDay
        // The profile over two weeks from Monday 00:00, and its prefix sums: the expected uses
        // in any stretch of up to a day, from any bin of the week, in O(1).
        var prefix = [0.0]
        prefix.reserveCapacity(14 * perDay + 1)
        for index in 0..<(14 * perDay) {
            let weekday = (index / perDay) % 7
            prefix.append(prefix[index] + profile[weekday >= 5 ? 1 : 0][index % perDay])
        }
        let classBins = (Self.gapClassesMinutes + [Self.gapRiskSpanMinutes]).map { Int($0) / Self.binMinutes }
        var seen = Array(repeating: 0.0, count: classes), expected = Array(repeating: 0.0, count: classes)
        for (from, to) in zip(sessions, sessions.dropFirst()) {
            let w = pow(0.5, max(0, now.timeIntervalSince(to.date)) / 86_400 / Self.scatteredHalfLifeDays)
            let local = LocalTime(from.date, offsetSeconds: from.utcOffsetSeconds)
            let startBin = local.weekday * perDay + local.minuteOfDay / Self.binMinutes
            let gapMinutes = to.date.timeIntervalSince(from.date) / 60
            // Bins whose middle comes before the next use (or the end of the span) were at risk.
            let atRisk = Int((min(gapMinutes, Self.gapRiskSpanMinutes) / Double(Self.binMinutes)).rounded(.up))
            for index in 0..<classes where classBins[index] < atRisk {
                let end = min(classBins[index + 1], atRisk)
                expected[index] += w * (prefix[startBin + end] - prefix[startBin + classBins[index]])
            }
            if let index = Self.gapClass(minutes: gapMinutes) { seen[index] += w }
        }
        let prior = Self.gapRiskPriorUses
        return zip(seen, expected).map { ($0 + prior) / ($1 + prior) }
    }
}
