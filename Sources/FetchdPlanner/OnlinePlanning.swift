import FetchdCore
import Foundation

/// One handler's usage planning replayed on a virtual clock as the daemon plans it: the uses
/// seen so far, the attempts made, their results fed back. `Simulator` (`fetchctl simulate`)
/// replays one handler with it and the shared-wake bench (`make bench-coalesce`) ten beside ten
/// on fixed intervals; `SimulatorParityTests` checks that it decides as the daemon's own
/// planning (`UsagePlanning.decide`) does.
public struct OnlinePlanning: Sendable {
    /// The planner, with its limits and policy.
    public let planner: FetchPlanner
    /// The uses seen so far.
    public private(set) var model: UsageModel
    /// Every attempt so far, oldest first.
    public private(set) var attempts: [Date]
    private var results: [FetchResult]
    /// When the content became fresh (the daemon's `StateStore.freshFetches`), and the first of
    /// them within the safeguard's window.
    private var freshFetches: [Date]
    private var trackFrom = 0

    /// Planning that has fetched once, at `firstFetch`, with new data.
    public init(planner: FetchPlanner, model: UsageModel, firstFetch: Date) {
        self.planner = planner
        self.model = model
        attempts = [firstFetch]
        results = [.newData]
        freshFetches = [firstFetch]
    }

    /// The attempts the planner reads: the latest, as many as its budget.
    private var recentAttempts: [Date] { Array(attempts.suffix(planner.limits.budgetPerDay)) }

    /// The next planned fetch after `now`, by the daemon's own rules (results fed back included).
    public mutating func decide(now: Date) -> FetchPlanner.Decision {
        var feedback = FetchPlanner.Feedback(resultsNewestFirst: results.suffix(10).reversed())
        let trackSince = TrackRecord.start(now: now)
        while trackFrom < freshFetches.count, freshFetches[trackFrom] < trackSince { trackFrom += 1 }
        feedback.freshFetches = Array(freshFetches[trackFrom...])
        return planner.next(now: now, model: model, recentFetches: recentAttempts, feedback: feedback)
    }

    /// The earliest a fetch may run at all at `now` (`min_interval` and the budget).
    public func floor(now: Date) -> Date { planner.earliestAllowed(now: now, recentFetches: recentAttempts) }

    /// Learns a use that has happened.
    public mutating func use(_ event: UsageEvent) { model.add(event) }

    /// Records an attempt at `date`: new data unless it `failed`.
    public mutating func fetched(at date: Date, failed: Bool = false) {
        attempts.append(date)
        if failed {
            results.append(.failed(reason: "simulated failure"))
        } else {
            results.append(.newData)
            freshFetches.append(date)
        }
    }
}
