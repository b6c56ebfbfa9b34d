import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdPlanner
import FetchdState
import Foundation

/// The usage planner's side of the database: a handler's recorded uses, attempts and results
/// read into a `UsageModel` and a `FetchPlanner`, and what they decide. Holds no state: the
/// coordinator keeps each handler's latest decision (`UsagePlans`).
struct UsagePlanning: Sendable {
    /// What a handler's plan is made from.
    struct Inputs {
        /// Its learned usage.
        var model: UsageModel
        /// Its planner, with its limits.
        var planner: FetchPlanner
        /// Its recent fetch attempts, newest first.
        var attempts: [Date]
        /// Its stored uses.
        var uses: [UsageRecord]
    }

    /// The usage-planned fetches of the last 24 hours, and `global_budget`.
    typealias GlobalBudgetUse = (recent: [Date], budget: Int)

    /// How much of a handler's own `budget` the last 24 hours used, as the planner counts it
    /// (`FetchPlanner.earliestAllowed`).
    struct BudgetUse: Sendable, Equatable {
        /// Attempts in the last 24 hours (fetches asked for included).
        var used: Int
        /// The handler's `budget`, per rolling 24 hours.
        var perDay: Int
        /// When the next attempt fits, while none does.
        var freesAt: Date?
    }

    /// What the planner decided for a handler, with what it was bound by.
    struct Decided: Sendable {
        /// The next planned fetch and why.
        var decision: FetchPlanner.Decision
        /// The earliest the handler may run at all (`min_interval` and its own budget).
        var floor: Date
        /// Its own budget's use.
        var budget: BudgetUse
    }

    /// Where uses, attempts and results are recorded.
    let state: StateStore

    /// A fresh decision from the stored uses, attempts and results, and the earliest the
    /// handler may run at all: the daemon's side of `SimulatorParityTests`, which checks that
    /// `fetchctl simulate` (`Simulator`) decides as this does.
    func decide(_ handler: HandlerConfig, now: Date) -> Decided {
        let inputs = inputs(of: handler, now: now)
        let results = ((try? state.history(of: handler.name, limit: 10)) ?? []).map(\.result)
        var feedback = FetchPlanner.Feedback(resultsNewestFirst: results)
        let trackSince = TrackRecord.start(now: now)
        feedback.freshFetches = (try? state.freshFetches(of: handler.name, since: trackSince)) ?? []
        // Never fetched: at once, like any new handler.
        let decision = inputs.attempts.isEmpty
            ? FetchPlanner.Decision(date: now, reason: "first fetch")
            : inputs.planner.next(now: now, model: inputs.model, recentFetches: inputs.attempts, feedback: feedback)
        var budget = Self.budgetUse(inputs.attempts, perDay: inputs.planner.limits.budgetPerDay, now: now)
        // The planner reads at most `budget` attempts: when all of them fall in the last day,
        // the day may hold more (fetches asked for count too), which `fetchctl status NAME`
        // shows as they are. With fewer in it, the day holds no other and the count is exact.
        if budget.used == budget.perDay {
            budget.used = (try? state.attempts(of: [handler.name], since: now.addingTimeInterval(-86_400)).count) ?? budget.used
        }
        return Decided(decision: decision, floor: inputs.planner.earliestAllowed(now: now, recentFetches: inputs.attempts),
                       budget: budget)
    }

    /// The budget `attempts` (the latest, oldest first, at most `perDay`) leave at `now`.
    static func budgetUse(_ attempts: [Date], perDay: Int, now: Date) -> BudgetUse {
        let dayAgo = now.addingTimeInterval(-86_400)
        var use = BudgetUse(used: attempts.filter { $0 > dayAgo }.count, perDay: perDay)
        use.freesAt = FetchPlanner.budgetFreesAt(recentFetches: attempts, perDay: perDay).flatMap { $0 > now ? $0 : nil }
        return use
    }

    /// The model of `handler`'s stored uses, its planner, its recent attempts and its uses.
    func inputs(of handler: HandlerConfig, now: Date) -> Inputs {
        var model = UsageModel()
        let uses = (try? state.usage.uses(of: handler.name, since: now.addingTimeInterval(-UsageLedger.memorySeconds))) ?? []
        for use in uses { model.add(UsageEvent(date: use.at, utcOffsetSeconds: use.utcOffsetSeconds)) }
        let attempts = (try? state.recentAttempts(of: handler.name, limit: handler.budgetPerDay)) ?? []
        var planner = FetchPlanner(limits: .init(
            budgetPerDay: handler.budgetPerDay, minIntervalSeconds: handler.minIntervalSeconds,
            maxStalenessSeconds: handler.maxStalenessSeconds, leadSeconds: handler.leadSeconds))
        planner.localOffset = { SystemTimeZone.secondsFromGMT(at: $0) }
        return Inputs(model: model, planner: planner, attempts: attempts, uses: uses)
    }

    /// What `fetchctl usage NAME` shows: the learned week, recent uses, the next planned
    /// fetches (`planned` when the planner's own plan is empty).
    func report(of handler: HandlerConfig, now: Date, planned fallback: () -> FetchPlanner.Decision?) -> UsageReport {
        let inputs = inputs(of: handler, now: now)
        // Expected uses per local hour of each day of the week.
        let week = inputs.model.profile(at: now).map { day in
            stride(from: 0, to: UsageModel.binsPerDay, by: 60 / UsageModel.binMinutes).map { start in
                day[start..<start + 60 / UsageModel.binMinutes].reduce(0, +)
            }
        }
        let recent = inputs.uses.filter { $0.at >= now.addingTimeInterval(-14 * 86_400) }.suffix(10)
        var planned = inputs.planner.plan(now: now, model: inputs.model, recentFetches: inputs.attempts)
        if planned.isEmpty, let next = fallback() { planned = [next] }
        return UsageReport(
            handler: handler.name, learns: handler.learnsUsage, sources: handler.usage.map(\.rawValue),
            daysOfUse: inputs.model.daysOfUse, weekByHour: week,
            recentUses: recent.map { UsageReport.Use(at: $0.at, utcOffsetSeconds: $0.utcOffsetSeconds, source: $0.source) },
            plannedFetches: planned.map { UsageReport.Planned(at: $0.date, reason: $0.reason) },
            afterUse: afterUse(of: handler, model: inputs.model, now: now))
    }

    /// The learned risk of the next use by time since the latest, for a handler that learns
    /// and has uses (nil otherwise: a population's figures would read as this user's).
    private func afterUse(of handler: HandlerConfig, model: UsageModel, now: Date) -> [UsageReport.AfterUse]? {
        guard handler.learnsUsage, !model.sessions.isEmpty else { return nil }
        return model.scattered.learnedGapRisk(at: now).map {
            UsageReport.AfterUse(fromMinutes: $0.fromMinutes, toMinutes: $0.toMinutes, risk: $0.risk)
        }
    }

    /// How much of `global_budget` is used, when one is set (one query: read it once per wake).
    func globalBudgetUse(_ config: LoadedConfig, now: Date) -> GlobalBudgetUse? {
        guard let budget = config.daemon.globalBudgetPerDay else { return nil }
        let names = config.handlers.filter(\.learnsUsage).map(\.name)
        return ((try? state.attempts(of: names, since: now.addingTimeInterval(-86_400))) ?? [], budget)
    }

    /// When `global_budget` allows the next usage-planned fetch, if it is spent now.
    static func floor(of use: GlobalBudgetUse?) -> Date? {
        use.flatMap { FetchPlanner.budgetFreesAt(recentFetches: $0.recent, perDay: $0.budget) }
    }

    /// `due` without the usage-planned handlers the shared budget has no room for in this wake
    /// (earliest planned first).
    /// `name` gives each item's handler name (the wake passes places in the configuration).
    static func withinGlobalBudget<Item>(_ due: [Item], name: (Item) -> String, planned: [String: Date],
                                         globalUse: GlobalBudgetUse?) -> [Item] {
        guard let (recent, budget) = globalUse else { return due }
        let room = max(0, budget - recent.count)
        let plannedDue = due.map(name).filter { planned[$0] != nil }.sorted { planned[$0]! < planned[$1]! }
        let allowed = Set(plannedDue.prefix(room))
        return due.filter { planned[name($0)] == nil || allowed.contains(name($0)) }
    }
}
