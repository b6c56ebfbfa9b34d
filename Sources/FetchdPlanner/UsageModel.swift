import Foundation

/// When a handler's content gets used, learned from its usage events: a profile over the local
/// time of day (5-minute bins) for each day of the week, blended with one for weekdays or
/// weekends so that a habit seen on Monday already counts for Tuesday (and, until a weekend has
/// been seen, for Saturday). Recent days weigh more (a half-life), so a new habit takes over
/// within days and an old one fades. On top, the short-term signal: after a use, how likely
/// another one follows within the hour.
///
/// Pure and deterministic: the daemon and `fetchctl simulate` run exactly this code.
public struct UsageModel: Sendable {
    /// Tunables, with the defaults the benchmark figures were measured with.
    public struct Settings: Sendable, Equatable {
        /// The age at which an event counts half, in days.
        public var halfLifeDays: Double = 7
        /// Events older than this are forgotten (they weigh under 1 % by then), in days.
        public var memoryDays: Double = 56
        /// Uses closer together than this are one session, in seconds.
        public var sessionSeconds: Double = 300
        /// How many distinct days of use before the profile is trusted (cold start until then).
        public var warmDays = 2
        /// Creates the defaults.
        public init() {}
    }

    /// Minutes per bin of the daily profile.
    public static let binMinutes = 5
    /// Bins per day.
    public static let binsPerDay = 1440 / binMinutes
    /// The spread of one use over neighbouring bins (habits jitter by minutes).
    static let kernel: [(offset: Int, weight: Double)] = [(-2, 0.1), (-1, 0.2), (0, 0.4), (1, 0.2), (2, 0.1)]

    /// The settings in force.
    public var settings: Settings
    /// Sessions (folded uses), oldest first.
    public private(set) var sessions: [UsageEvent] = []

    /// An empty model.
    public init(settings: Settings = Settings()) { self.settings = settings }

    /// A model of `sessions` as they are (already folded, oldest first): part of another's.
    init(settings: Settings, sessions: ArraySlice<UsageEvent>) {
        self.settings = settings
        self.sessions = Array(sessions)
    }

    /// Records a use; one within `sessionSeconds` of the previous is part of its session.
    public mutating func add(_ event: UsageEvent) {
        if let last = sessions.last, event.date.timeIntervalSince(last.date) < settings.sessionSeconds,
           event.date >= last.date {
            return
        }
        sessions.append(event)
        let horizon = event.date.addingTimeInterval(-settings.memoryDays * 86_400)
        if let first = sessions.first, first.date < horizon {
            sessions.removeAll { $0.date < horizon }
        }
    }

    /// Distinct local days with at least one use.
    public var daysOfUse: Int { Set(sessions.map { LocalTime($0.date, offsetSeconds: $0.utcOffsetSeconds).dayNumber }).count }

    /// Whether enough has been seen to predict (else the planner runs on `min_interval`).
    public var isWarm: Bool { daysOfUse >= settings.warmDays }

    /// The learned profile at `now`: for each day of the week (0 = Monday), expected uses per
    /// 5-minute bin of that local day.
    public func profile(at now: Date) -> [[Double]] {
        var byWeekday = Array(repeating: Array(repeating: 0.0, count: Self.binsPerDay), count: 7)
        var byKind = Array(repeating: Array(repeating: 0.0, count: Self.binsPerDay), count: 2)
        guard let first = sessions.first else { return byWeekday }
        let kernel = Self.kernel(daysOfUse: daysOfUse)
        let weight = { (date: Date) in self.decay(date, at: now) }
        for session in sessions {
            let local = LocalTime(session.date, offsetSeconds: session.utcOffsetSeconds)
            let w = weight(session.date)
            let bin = local.minuteOfDay / Self.binMinutes
            for (offset, share) in kernel {
                let spread = (bin + offset + Self.binsPerDay) % Self.binsPerDay
                byWeekday[local.weekday][spread] += w * share
                byKind[local.weekday >= 5 ? 1 : 0][spread] += w * share
            }
        }
        // Normalise by the (decayed) number of days observed of each kind, so a bin holds the
        // expected uses on one such day, whether or not the day had any use.
        let daysByWeekday = decayedDaysByWeekday(at: now, halfLifeDays: settings.halfLifeDays)
        let offset = sessions.last?.utcOffsetSeconds ?? 0
        let firstDay = LocalTime(first.date, offsetSeconds: first.utcOffsetSeconds).dayNumber
        let today = LocalTime(now, offsetSeconds: offset).dayNumber
        var daysByKind = [daysByWeekday[0..<5].reduce(0, +), daysByWeekday[5..<7].reduce(0, +)]
        // Until a whole day of a kind has passed, that kind borrows the other's profile: a new
        // user's first weekend is planned on the weekdays' habits instead of as days without
        // use (no fetch until max_staleness, the worst staleness of the early traces). Once one
        // such day has passed, what it showed counts, no use at all included.
        var seen = [false, false]
        for day in firstDay..<max(firstDay, today) { seen[Self.weekday(ofDay: day) >= 5 ? 1 : 0] = true }
        for kind in 0..<2 where !seen[kind] && seen[1 - kind] {
            byKind[kind] = byKind[1 - kind]
            daysByKind[kind] = daysByKind[1 - kind]
        }
        var blended = byWeekday
        for weekday in 0..<7 {
            let kind = weekday >= 5 ? 1 : 0
            for bin in 0..<Self.binsPerDay {
                let perKind = daysByKind[kind] > 0 ? byKind[kind][bin] / daysByKind[kind] : 0
                let perDay = daysByWeekday[weekday] > 0 ? byWeekday[weekday][bin] / daysByWeekday[weekday] : perKind
                blended[weekday][bin] = 0.5 * perDay + 0.5 * perKind
            }
        }
        return blended
    }

    /// The spread of one use over neighbouring bins: wide while few days have been seen (a
    /// habit's time is known only roughly from two or three uses), narrowing to `kernel`.
    static func kernel(daysOfUse: Int) -> [(offset: Int, weight: Double)] {
        // Two bins (10 min) at two days, shrinking as 1/sqrt(days) like the error of a mean.
        let sd = 2 * (2 / Double(max(1, daysOfUse))).squareRoot()
        guard sd > 1.1 else { return kernel }  // `kernel`'s own spread
        return gaussianKernel(sdBins: sd)
    }

    /// A normal kernel over whole bins, `sdBins` wide, summing to 1 (three sd each side).
    static func gaussianKernel(sdBins: Double) -> [(offset: Int, weight: Double)] {
        let reach = Int((3 * sdBins).rounded(.up))
        let raw = (-reach...reach).map { (offset: $0, weight: exp(-Double($0 * $0) / (2 * sdBins * sdBins))) }
        let total = raw.reduce(0) { $0 + $1.weight }
        return raw.map { ($0.offset, $0.weight / total) }
    }

    /// Its scattered-use view: the forecast for uses with no habit (`ScatteredUse`).
    public var scattered: ScatteredUse { ScatteredUse(self) }

    /// The weekday (0 = Monday) of a day number (days since 1970-01-01, a Thursday).
    static func weekday(ofDay day: Int) -> Int { ((day % 7) + 7 + 3) % 7 }

    /// The share of sessions followed by another within the hour (the short-term signal).
    public var followUpShare: Double {
        guard sessions.count > 1 else { return 0 }
        var followed = 0
        for index in 0..<(sessions.count - 1)
        where sessions[index + 1].date.timeIntervalSince(sessions[index].date) <= Self.followUpWindowSeconds.upperBound {
            followed += 1
        }
        return Double(followed) / Double(sessions.count - 1)
    }
}
