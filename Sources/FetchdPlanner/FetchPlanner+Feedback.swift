import FetchdCore
import Foundation

extension FetchPlanner {
    /// What a handler's recent results say, fed back into its plan as iOS does: a source that
    /// keeps answering "no new data" gets fewer fetches, new data restores them; failures back
    /// off exponentially (with jitter, never for good); a handler that keeps overrunning its
    /// deadline gets a smaller share of its budget until it behaves.
    public struct Feedback: Sendable, Equatable {
        /// Failed or expired results in a row, newest first.
        public var consecutiveFailures = 0
        /// `noData` results in a row since the last `newData`.
        public var noDataRun = 0
        /// `expired` results among the last ten.
        public var recentOverruns = 0
        /// When the content became fresh (successful fetches, oldest first) since
        /// `TrackRecord.start(now:)`: the safeguard's evidence, with the model's uses.
        /// Empty: no safeguard.
        public var freshFetches: [Date] = []

        /// No feedback: the full budget, no back-off.
        public init() {}

        /// From results, newest first.
        public init(resultsNewestFirst results: [FetchResult]) {
            consecutiveFailures = results.prefix(while: \.isFailure).count
            noDataRun = results.drop(while: \.isFailure).prefix { $0 == .noData }.count
            recentOverruns = results.prefix(10).filter { $0 == .expired }.count
        }
    }

    /// Back-off after failures: one minute (or `min_interval`) doubled per failure, at most an hour.
    static let backoffCapSeconds = 3600.0

    /// The budget after feedback, and why it is lower (nil when it is not).
    func budget(after feedback: Feedback) -> (perDay: Int, reason: String?) {
        var share = 1.0
        var reasons: [String] = []
        if feedback.noDataRun >= 3 {
            share /= 1 + Double(feedback.noDataRun) / 3
            reasons.append("\(feedback.noDataRun) × no new data")
        }
        if feedback.recentOverruns > 0 {
            share *= max(0.25, 1 - 0.15 * Double(feedback.recentOverruns))
            reasons.append("\(feedback.recentOverruns) deadline overrun(s) in the last 10")
        }
        let perDay = max(1, Int((Double(limits.budgetPerDay) * share).rounded()))
        guard perDay < limits.budgetPerDay else { return (limits.budgetPerDay, nil) }
        return (perDay, "budget \(perDay)/day (" + reasons.joined(separator: ", ") + ")")
    }

    /// The wait after the latest of `failures` failures in a row, jittered by ±20 % from
    /// `seed` (the failed attempt's time), so that many handlers failing together spread out.
    func backoffSeconds(failures: Int, seed: Date) -> Double {
        let base = max(60, limits.minIntervalSeconds)
        let wait = min(Self.backoffCapSeconds, base * pow(2, Double(min(failures, 30) - 1)))
        var random = SplitMix(seed: UInt64(bitPattern: Int64(seed.timeIntervalSince1970 * 1000)))
        return max(limits.minIntervalSeconds, wait * (0.8 + 0.4 * random.unit()))
    }

    /// `next(now:model:recentFetches:)` with the handler's recent results taken into account:
    /// the budget they leave, the safeguard's days on a fixed interval, the back-off after failures.
    public func next(now: Date, model: UsageModel, recentFetches: [Date], feedback: Feedback) -> Decision {
        let (perDay, budgetReason) = budget(after: feedback)
        var adjusted = self
        adjusted.limits.budgetPerDay = perDay
        var decision = adjusted.next(now: now, model: model, recentFetches: Array(recentFetches.suffix(perDay)))
        decision = adjusted.safeguarded(decision, now: now, model: model, recentFetches: recentFetches, feedback: feedback)
        if let budgetReason { decision.reason += "; \(budgetReason)" }
        // After a failure the content in hand is older than planned: retry, at growing intervals,
        // within the floor and the budget, instead of waiting for the next planned fetch.
        if feedback.consecutiveFailures > 0, let last = recentFetches.last {
            let wait = backoffSeconds(failures: feedback.consecutiveFailures, seed: last)
            let floor = adjusted.earliestAllowed(now: now, recentFetches: Array(recentFetches.suffix(perDay)))
            decision = Decision(date: max(floor, last.addingTimeInterval(wait)),
                                reason: "failed \(feedback.consecutiveFailures) time(s) in a row: retry after \(Self.text(wait))")
            decision.retryAfterFailures = feedback.consecutiveFailures
        }
        return decision
    }
}
