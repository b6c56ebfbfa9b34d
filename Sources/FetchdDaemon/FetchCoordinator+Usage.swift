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

    /// A plan older than this is made again even if nothing happened: its 24-hour horizon has
    /// moved on (seconds).
    static let planLifetimeSeconds = 3600.0

    /// Records a use of `name`'s content (durably) and plans its next fetch again.
    public func recordUse(_ name: String, source: HandlerConfig.UsageSource, at date: Date = Date()) -> UseOutcome {
        guard let handler = config.handler(named: name) else { return .unknownHandler }
        do {
            try state.recordUse(of: name, at: date, utcOffsetSeconds: SystemTimeZone.secondsFromGMT(at: date),
                                source: source.rawValue)
        } catch {
            logger.error("\(name): cannot record a use in \(state.path): \(error)")
        }
        logger.debug("\(name): used (\(source.rawValue))", metadata: ["handler": "\(name)"])
        plans[name] = nil
        return .recorded(next: plannedFetch(handler, now: Date()))
    }

    /// The usage planner's next fetch for a handler that learns its usage, else nil.
    public func plannedFetch(_ handler: HandlerConfig, now: Date = Date()) -> FetchPlanner.Decision? {
        guard handler.learnsUsage, handler.enabled, handler.minInterval != .never else { return nil }
        if let plan = plans[handler.name], now.timeIntervalSince(plan.madeAt) < Self.planLifetimeSeconds {
            return plan.decision
        }
        let (decision, floor) = decide(handler, now: now)
        plans[handler.name] = (decision, floor, now)
        return decision
    }

    /// A fresh decision from the stored uses, attempts and results (no cached plan), and the
    /// earliest the handler may run: the daemon's side of `SimulatorParityTests`, which checks
    /// that `fetchctl simulate` (`Simulator`) decides as this does.
    func decide(_ handler: HandlerConfig, now: Date) -> (decision: FetchPlanner.Decision, floor: Date) {
        let (model, planner, attempts, _) = planningInputs(handler, now: now)
        let results = ((try? state.history(of: handler.name, limit: 10)) ?? []).compactMap(\.fetchResult)
        // Never fetched: at once, like any new handler.
        let decision = attempts.isEmpty
            ? FetchPlanner.Decision(date: now, reason: "first fetch")
            : planner.next(now: now, model: model, recentFetches: attempts,
                           feedback: FetchPlanner.Feedback(resultsNewestFirst: results))
        return (decision, planner.earliestAllowed(now: now, recentFetches: attempts))
    }

    /// The model of `handler`'s stored uses, its planner, its recent fetch attempts, and the
    /// stored uses themselves.
    func planningInputs(_ handler: HandlerConfig, now: Date)
        -> (model: UsageModel, planner: FetchPlanner, attempts: [Date], uses: [StateStore.UsageRecord])
    {
        var model = UsageModel()
        let uses = (try? state.uses(of: handler.name, since: now.addingTimeInterval(-StateStore.usageMemorySeconds))) ?? []
        for use in uses { model.add(UsageEvent(date: use.at, utcOffsetSeconds: use.utcOffsetSeconds)) }
        let attempts = (try? state.recentAttempts(of: handler.name, limit: handler.budgetPerDay)) ?? []
        var planner = FetchPlanner(limits: .init(
            budgetPerDay: handler.budgetPerDay, minIntervalSeconds: handler.minIntervalSeconds,
            maxStalenessSeconds: handler.maxStalenessSeconds, leadSeconds: handler.leadSeconds))
        planner.localOffset = { SystemTimeZone.secondsFromGMT(at: $0) }
        return (model, planner, attempts, uses)
    }

    /// What `fetchctl usage NAME` shows: the learned week, recent uses, the next planned
    /// fetches. Nil when no such handler is loaded.
    public func usageReport(of name: String, now: Date = Date()) -> UsageReport? {
        guard let handler = config.handler(named: name) else { return nil }
        let (model, planner, attempts, uses) = planningInputs(handler, now: now)
        // Expected uses per local hour of each day of the week.
        let week = model.profile(at: now).map { day in
            stride(from: 0, to: UsageModel.binsPerDay, by: 60 / UsageModel.binMinutes).map { start in
                day[start..<start + 60 / UsageModel.binMinutes].reduce(0, +)
            }
        }
        let recent = uses.filter { $0.at >= now.addingTimeInterval(-14 * 86_400) }.suffix(10)
        var planned = planner.plan(now: now, model: model, recentFetches: attempts)
        if planned.isEmpty, let next = plannedFetch(handler, now: now) { planned = [next] }
        return UsageReport(
            handler: name, learns: handler.learnsUsage, sources: handler.usage.map(\.rawValue),
            daysOfUse: model.daysOfUse, weekByHour: week,
            recentUses: recent.map { UsageReport.Use(at: $0.at, utcOffsetSeconds: $0.utcOffsetSeconds, source: $0.source) },
            plannedFetches: planned.map { UsageReport.Planned(at: $0.date, reason: $0.reason) },
            afterUse: afterUse(of: handler, model: model, now: now))
    }

    /// The learned risk of the next use by time since the latest, for a handler that learns
    /// and has uses (nil otherwise: a population's figures would read as this user's).
    private func afterUse(of handler: HandlerConfig, model: UsageModel, now: Date) -> [UsageReport.AfterUse]? {
        guard handler.learnsUsage, !model.sessions.isEmpty else { return nil }
        return model.learnedGapRisk(at: now).map {
            UsageReport.AfterUse(fromMinutes: $0.fromMinutes, toMinutes: $0.toMinutes, risk: $0.risk)
        }
    }

    /// Planned times of the learning handlers, for the scheduler, held back by the shared
    /// budget (`global_budget`) when it is spent.
    /// `globalUse` is `globalBudgetUse(now:)` when the caller has already read it.
    func plannedDates(now: Date, globalUse: GlobalBudgetUse?? = nil) -> [String: Date] {
        var dates: [String: Date] = [:]
        let floor = Self.floor(of: globalUse ?? globalBudgetUse(now: now))
        for handler in config.handlers where handler.learnsUsage {
            if let decision = plannedFetch(handler, now: now) { dates[handler.name] = max(decision.date, floor ?? .distantPast) }
        }
        return dates
    }

    /// The earliest each planned handler may run at all (`min_interval` and its own budget): a
    /// wake may run it a little before its planned time, never before this.
    func plannedFloors() -> [String: Date] { plans.mapValues(\.floor) }

    /// The usage-planned fetches of the last 24 hours, and `global_budget`.
    typealias GlobalBudgetUse = (recent: [Date], budget: Int)

    /// How much of `global_budget` is used, when one is set (one query: read it once per wake).
    func globalBudgetUse(now: Date) -> GlobalBudgetUse? {
        guard let budget = config.daemon.globalBudgetPerDay else { return nil }
        let names = config.handlers.filter(\.learnsUsage).map(\.name)
        return ((try? state.attempts(of: names, since: now.addingTimeInterval(-86_400))) ?? [], budget)
    }

    /// When `global_budget` allows the next usage-planned fetch, if it is spent now.
    func globalBudgetFloor(now: Date) -> Date? { Self.floor(of: globalBudgetUse(now: now)) }

    private static func floor(of use: GlobalBudgetUse?) -> Date? {
        guard let (recent, budget) = use, recent.count >= budget else { return nil }
        return recent[recent.count - budget].addingTimeInterval(86_400)
    }

    /// `due` without the usage-planned handlers the shared budget has no room for in this wake
    /// (earliest planned first).
    func withinGlobalBudget(_ due: [HandlerConfig], planned: [String: Date], globalUse: GlobalBudgetUse?) -> [HandlerConfig] {
        guard let (recent, budget) = globalUse else { return due }
        let room = max(0, budget - recent.count)
        let plannedDue = due.filter { planned[$0.name] != nil }.sorted { planned[$0.name]! < planned[$1.name]! }
        let allowed = Set(plannedDue.prefix(room).map(\.name))
        return due.filter { planned[$0.name] == nil || allowed.contains($0.name) }
    }
}
