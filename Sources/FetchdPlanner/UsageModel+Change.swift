import Foundation

extension UsageModel {
    /// The last this many whole weekdays, and weekend days, are checked for a changed habit.
    static let recentDaysByKind = [3, 2]
    /// A use is unexpected when the profile from before the recent days expected fewer uses than
    /// this within 15 minutes of it (`expectedNearUseBins`).
    static let expectedNearUse = 0.1
    /// The bins on each side of a use counted as near it (the 7 bins around it: 15 minutes).
    static let expectedNearUseBins = 3
    /// The share of unexpected recent uses at which the recent days start to count (below it:
    /// the few unplanned uses of a steady habit), and at which they count the most.
    static let surpriseRange = 0.35...0.65
    /// The most the recent days of a kind weigh in its profile.
    static let mostRecentShare = 0.7
    /// Uses that recur at least this much are habits (`recurrence(at:)`); only a habit can be
    /// seen to change: scattered uses are always unexpected.
    public static let habitRecurrence = 2.0

    /// `profile(at:)`, moved toward the last few days of each kind (weekdays, weekend) when the
    /// profile from before them did not expect their uses: a habit that changed. With a 7-day
    /// half-life, and the same weekday of past weeks counting half, a new habit outweighed
    /// the old one only after one to two weeks, while its uses went stale (habit-shift: 0.52 of
    /// the uses fresh 4 to 7 days after the change, 0.60 after 8 to 11, against 0.79 before
    /// it). A steady habit's odd unplanned use does not move it (under `surpriseRange`).
    public func adaptedProfile(at now: Date) -> [[Double]] {
        var adapted = profile(at: now)
        guard let latest = sessions.last else { return adapted }
        let today = LocalTime(now, offsetSeconds: latest.utcOffsetSeconds).dayNumber
        for kind in 0..<2 {
            guard let (share, recent) = changedHabit(kind: kind, today: today, offsetSeconds: latest.utcOffsetSeconds)
            else { continue }
            for weekday in kind == 0 ? 0..<5 : 5..<7 {
                for bin in 0..<Self.binsPerDay {
                    adapted[weekday][bin] = (1 - share) * adapted[weekday][bin] + share * recent[bin]
                }
            }
        }
        return adapted
    }

    /// For the days of `kind` (0: weekdays, 1: weekend) before `today`: how much their recent
    /// profile should weigh, and that profile (uses per bin on one such day); nil when nothing
    /// changed or too little is known.
    func changedHabit(kind: Int, today: Int, offsetSeconds: Int) -> (share: Double, recent: [Double])? {
        var days: [Int] = []
        var day = today - 1
        while days.count < Self.recentDaysByKind[kind], day >= today - 14 {
            if (Self.weekday(ofDay: day) >= 5 ? 1 : 0) == kind { days.append(day) }
            day -= 1
        }
        guard let earliest = days.last else { return nil }
        let cutoff = Date(timeIntervalSince1970: Double(earliest * 86_400 - offsetSeconds))
        let recent = sessions.filter { days.contains(LocalTime($0.date, offsetSeconds: $0.utcOffsetSeconds).dayNumber) }
        guard recent.count >= 3 else { return nil }
        let before = UsageModel(settings: settings, sessions: sessions.prefix { $0.date < cutoff })
        guard before.isWarm else { return nil }
        let old = before.profile(at: cutoff)
        let unexpected = recent.filter { use in
            let local = LocalTime(use.date, offsetSeconds: use.utcOffsetSeconds)
            let bin = local.minuteOfDay / Self.binMinutes
            let near = (-Self.expectedNearUseBins...Self.expectedNearUseBins).reduce(0.0) {
                $0 + old[local.weekday][(bin + $1 + Self.binsPerDay) % Self.binsPerDay]
            }
            return near < Self.expectedNearUse
        }.count
        let surprise = Double(unexpected) / Double(recent.count)
        let range = Self.surpriseRange
        let share = Self.mostRecentShare * min(1, max(0, (surprise - range.lowerBound) / (range.upperBound - range.lowerBound)))
        // Checked last, as the dearest: a steady habit rarely gets this far.
        guard share > 0, before.recurrence(at: cutoff) >= Self.habitRecurrence else { return nil }
        var perBin = Array(repeating: 0.0, count: Self.binsPerDay)
        for use in recent {
            let bin = LocalTime(use.date, offsetSeconds: use.utcOffsetSeconds).minuteOfDay / Self.binMinutes
            for (offset, weight) in Self.kernel {
                perBin[(bin + offset + Self.binsPerDay) % Self.binsPerDay] += weight / Double(days.count)
            }
        }
        return (share, perBin)
    }
}
