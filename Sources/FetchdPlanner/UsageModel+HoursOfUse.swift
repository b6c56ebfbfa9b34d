import Foundation

extension UsageModel {
    /// The hours of use are smoothed over this many bins on each side (1 h).
    static let hoursOfUseRadiusBins = 12
    /// Uses on different days this close in time of day (bins each side, 20 min) recur.
    static let recurrenceNearBins = 4
    /// ... compared with how many fall this close (bins each side, 2 h).
    static let recurrenceFarBins = 24

    /// Expected uses per 5-minute bin from `start` for `bins` bins, from every day pooled (no
    /// weekday or weekend split) and smoothed over an hour each side: when the user uses the
    /// content at all, not when exactly. Where uses have no habit this is a steadier guide than
    /// the day's own profile, which, learned from a few scattered uses per day (on a weekend
    /// from one or two days), is a handful of spikes with nothing between them, and the plan
    /// left hours without a fetch while uses kept coming.
    public func hoursOfUse(from start: Date, bins: Int, localOffset: (@Sendable (Date) -> Int)? = nil) -> [Double] {
        guard let latest = sessions.last else { return Array(repeating: 0, count: bins) }
        var byBin = Array(repeating: 0.0, count: Self.binsPerDay)
        for session in sessions {
            let local = LocalTime(session.date, offsetSeconds: session.utcOffsetSeconds)
            byBin[local.minuteOfDay / Self.binMinutes] += decay(session.date, at: start)
        }
        // Per day observed (decayed), whether or not the day had a use, as in `profile(at:)`.
        let days = decayedDaysByWeekday(at: start, halfLifeDays: settings.halfLifeDays).reduce(0, +)
        let radius = Self.hoursOfUseRadiusBins, count = Self.binsPerDay
        let around = Self.circularSums(byBin)
        let smooth = (0..<count).map { around($0, radius) / Double(2 * radius + 1) / max(days, 1e-9) }
        let binSeconds = Double(Self.binMinutes * 60)
        return (0..<bins).map { index in
            let date = start.addingTimeInterval(Double(index) * binSeconds)
            let local = LocalTime(date, offsetSeconds: localOffset?(date) ?? latest.utcOffsetSeconds)
            return smooth[local.minuteOfDay / Self.binMinutes]
        }
    }

    /// Whether the uses recur at the same times of day: how much likelier two uses on different
    /// days are to fall within 20 minutes of each other than anywhere within two hours, per
    /// minute of window. About 1 when the uses are scattered over the hours of use (nothing to
    /// wait for), well above when they come back at the same times (habits: 2.5-4 for habits
    /// jittering by ±8 minutes, 1.7-2.4 by ±20). Recent days weigh more, as in the profile.
    public func recurrence(at now: Date) -> Double {
        let count = Self.binsPerDay
        var byBin = Array(repeating: 0.0, count: count)
        var byDay: [Int: [(bin: Int, weight: Double)]] = [:]
        for session in sessions {
            let local = LocalTime(session.date, offsetSeconds: session.utcOffsetSeconds)
            let bin = local.minuteOfDay / Self.binMinutes, weight = decay(session.date, at: now)
            byBin[bin] += weight
            byDay[local.dayNumber, default: []].append((bin, weight))
        }
        let around = Self.circularSums(byBin)
        /// Weighted pairs of uses on different days within `radius` bins, per bin of window.
        func pairs(radius: Int) -> Double {
            var all = 0.0
            for bin in 0..<count where byBin[bin] > 0 { all += byBin[bin] * around(bin, radius) }
            // Pairs within one day (a use with itself included) say nothing about recurrence.
            for uses in byDay.values {
                for one in uses {
                    for other in uses {
                        let apart = abs(one.bin - other.bin)
                        if min(apart, count - apart) <= radius { all -= one.weight * other.weight }
                    }
                }
            }
            return max(0, all) / Double(2 * radius + 1)
        }
        let far = pairs(radius: Self.recurrenceFarBins)
        return far > 1e-9 ? pairs(radius: Self.recurrenceNearBins) / far : 0
    }

    /// The weight of an event at `date` seen from `now` (the half-life).
    func decay(_ date: Date, at now: Date) -> Double { decay(date, at: now, halfLifeDays: settings.halfLifeDays) }

    /// For each weekday (0 = Monday), the local days from the first use's to today's, each
    /// weighed by the decay of its noon seen from `now`: what a profile divides by, so that a
    /// bin holds the expected uses on one such day whether or not the day had a use. Local days
    /// are at the latest use's UTC offset.
    func decayedDaysByWeekday(at now: Date, halfLifeDays: Double) -> [Double] {
        var days = Array(repeating: 0.0, count: 7)
        guard let first = sessions.first, let latest = sessions.last else { return days }
        let offset = latest.utcOffsetSeconds
        let firstDay = LocalTime(first.date, offsetSeconds: first.utcOffsetSeconds).dayNumber
        let today = LocalTime(now, offsetSeconds: offset).dayNumber
        for day in firstDay...max(firstDay, today) {
            let noon = Date(timeIntervalSince1970: Double(day * 86_400 + 43_200 - offset))
            days[Self.weekday(ofDay: day)] += decay(noon, at: now, halfLifeDays: halfLifeDays)
        }
        return days
    }

    /// The weight of an event at `date` seen from `now` with `halfLifeDays`.
    func decay(_ date: Date, at now: Date, halfLifeDays: Double) -> Double {
        pow(0.5, max(0, now.timeIntervalSince(date)) / 86_400 / halfLifeDays)
    }

    /// Sums of `values` over a circular window: `(bin, radius)` gives bins bin-radius...bin+radius
    /// of the day, wrapping at midnight (radius < values.count).
    static func circularSums(_ values: [Double]) -> (Int, Int) -> Double {
        let count = values.count
        var prefix = [0.0]
        prefix.reserveCapacity(3 * count + 1)
        for index in 0..<(3 * count) { prefix.append(prefix[index] + values[index % count]) }
        return { bin, radius in prefix[count + bin + radius + 1] - prefix[count + bin - radius] }
    }
}
