import FetchdConfig
import FetchdPlanner
import Foundation

/// The usage planner's latest decision for each handler that learns its usage. A decision is
/// kept until the handler is used or fetched, or a reload, and for at most `lifetimeSeconds`:
/// deciding costs a read of the handler's uses and fetches, and every wake and status asks.
struct UsagePlans {
    /// A decision with what bound it (`UsagePlanning.Decided`), and when it was made.
    typealias Plan = (decided: UsagePlanning.Decided, madeAt: Date)

    /// A plan older than this is made again even if nothing happened: its 24-hour horizon has
    /// moved on (seconds).
    static let lifetimeSeconds = 3600.0

    /// Reads the planner's inputs from the state database.
    let planning: UsagePlanning
    private var plans: [String: Plan] = [:]

    /// No decisions yet; they are made on first need.
    init(planning: UsagePlanning) { self.planning = planning }

    /// The next planned fetch of `handler` if it learns its usage, else nil; the kept decision
    /// while it is younger than `lifetimeSeconds`.
    mutating func decision(for handler: HandlerConfig, now: Date) -> FetchPlanner.Decision? {
        guard handler.learnsUsage, handler.enabled, handler.minInterval != .never else { return nil }
        if let plan = plans[handler.name], now.timeIntervalSince(plan.madeAt) < Self.lifetimeSeconds {
            return plan.decided.decision
        }
        let decided = planning.decide(handler, now: now)
        plans[handler.name] = (decided, now)
        return decided.decision
    }

    /// The decisions of the learning handlers among `handlers`, held back by the shared budget
    /// (`global_budget`) when `globalUse` says it is spent: then planned for when it has room,
    /// and the reason says so.
    mutating func decisions(of handlers: [HandlerConfig], now: Date,
                            globalUse: UsagePlanning.GlobalBudgetUse?) -> [String: FetchPlanner.Decision] {
        var decisions: [String: FetchPlanner.Decision] = [:]
        let floor = UsagePlanning.floor(of: globalUse)
        for handler in handlers where handler.learnsUsage {
            guard var decision = decision(for: handler, now: now) else { continue }
            if let floor, floor > decision.date {
                decision.date = floor
                decision.reason += "; global_budget spent until then"
            }
            decisions[handler.name] = decision
        }
        return decisions
    }

    /// The earliest each planned handler may run at all: a wake may run it a little before its
    /// planned time, never before this.
    var floors: [String: Date] { plans.mapValues(\.decided.floor) }

    /// How much of its own budget each planned handler used, as its decision counted it.
    var budgets: [String: UsagePlanning.BudgetUse] { plans.mapValues(\.decided.budget) }

    /// Drops `name`'s decision: it was used or fetched, so its budget or its content's age changed.
    mutating func forget(_ name: String) { plans[name] = nil }

    /// Drops every decision (a reload may have changed budgets, sources or intervals).
    mutating func forgetAll() { plans = [:] }
}
