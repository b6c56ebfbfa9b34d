import Foundation

extension FetchPlanner {
    /// `decision` (the plan's) on the safeguard's days replaced by the fixed interval's next tick;
    /// on the plan's days, brought forward to the first tick of a later interval day it would
    /// pass. The share is the one found at the local midnight that starts today.
    func safeguarded(_ decision: Decision, now: Date, model: UsageModel, recentFetches: [Date], feedback: Feedback) -> Decision {
        guard model.isWarm, !feedback.freshFetches.isEmpty else { return decision }
        let offset = { (date: Date) in self.localOffset?(date) ?? model.sessions.last?.utcOffsetSeconds ?? 0 }
        let today = LocalTime(now, offsetSeconds: offset(now)).dayNumber
        let midnight = { (day: Int) in Date(timeIntervalSince1970: Double(day * 86_400 - offset(now))) }
        let (share, record) = Safeguard.share(sessions: model.sessions, freshFetches: feedback.freshFetches,
                                             dayStart: midnight(today))
        guard share > 0 else { return decision }
        let perDay = limits.budgetPerDay
        let floor = earliestAllowed(now: now, recentFetches: Array(recentFetches.suffix(perDay)))
        let why = "\(Int((share * 100).rounded())) % of days (\(record.freshUses) of \(record.uses) uses fresh in "
            + "8 weeks, an interval: \(Int(record.intervalFreshUses.rounded())))"
        let day = { (date: Date) in LocalTime(date, offsetSeconds: offset(date)).dayNumber }
        if Safeguard.isIntervalDay(today, share: share) {
            let tick = Safeguard.intervalTick(perDay: perDay, now: now, latest: recentFetches.last)
            guard day(tick) != today, !Safeguard.isIntervalDay(day(tick), share: share) else {
                return Decision(date: max(floor, tick), reason: "safeguard: a fixed interval on " + why)
            }
            // The next tick falls on a day of the plan: the plan's decision, from that day on.
            return Decision(date: max(floor, decision.date, midnight(today + 1)), reason: decision.reason)
        }
        // A plan's decision days ahead (max_staleness) stops at the first interval day on the way.
        let last = day(decision.date)
        guard last > today, let next = (today + 1...last).first(where: { Safeguard.isIntervalDay($0, share: share) }) else {
            return Decision(date: decision.date,
                            reason: decision.reason + "; safeguard: the plan's day, a fixed interval on " + why)
        }
        let tick = Safeguard.intervalTick(perDay: perDay, now: midnight(next).addingTimeInterval(-1), latest: recentFetches.last)
        guard tick < decision.date else { return decision }
        return Decision(date: max(floor, tick), reason: "safeguard: a fixed interval on " + why)
    }
}
