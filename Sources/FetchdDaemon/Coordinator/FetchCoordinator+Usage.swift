import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdPlanner
import FetchdState
import Foundation

extension FetchCoordinator {
    /// What `recordUse` did.
    public enum UseOutcome: Sendable, Equatable {
        /// No such handler is loaded.
        case unknownHandler
        /// Stored; the handler's next planned fetch (nil when it does not learn its usage).
        case recorded(next: FetchPlanner.Decision?)
    }

    /// Records a use of `name`'s content (durably) and plans its next fetch again.
    public func recordUse(_ name: String, source: HandlerConfig.UsageSource, at date: Date = Date()) -> UseOutcome {
        guard let handler = config.handler(named: name) else { return .unknownHandler }
        do {
            try state.usage.record(of: name, at: date, utcOffsetSeconds: SystemTimeZone.secondsFromGMT(at: date),
                                source: source.rawValue)
        } catch {
            logger.error("\(name): cannot record a use in \(state.path): \(error)")
        }
        logger.debug("\(name): used (\(source.rawValue))", metadata: ["handler": "\(name)"])
        plans.forget(name)
        return .recorded(next: plannedFetch(handler, now: Date()))
    }

    /// The usage planner's next fetch for a handler that learns its usage, else nil (`UsagePlans`).
    public func plannedFetch(_ handler: HandlerConfig, now: Date = Date()) -> FetchPlanner.Decision? {
        plans.decision(for: handler, now: now)
    }

    /// A fresh decision, not the kept one (`UsagePlanning.decide`).
    func decide(_ handler: HandlerConfig, now: Date) -> UsagePlanning.Decided {
        plans.planning.decide(handler, now: now)
    }

    /// What `fetchctl usage NAME` shows; nil when no such handler is loaded.
    public func usageReport(of name: String, now: Date = Date()) -> UsageReport? {
        guard let handler = config.handler(named: name) else { return nil }
        return plans.planning.report(of: handler, now: now, planned: { plannedFetch(handler, now: now) })
    }
}
