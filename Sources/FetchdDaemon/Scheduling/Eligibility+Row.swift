import FetchdConfig
import FetchdPlanner
import FetchdState
import Foundation

extension Eligibility {
    /// One thing that keeps a handler from being fetched on its schedule now, with its date or
    /// figure.
    enum Hold: Sendable, Equatable {
        /// `enabled = false`: fetched only when asked.
        case disabled
        /// `min_interval = "never"`: fetched only when asked or pushed.
        case onRequestOnly
        /// A fetch of it runs, or a wake took it and starts it shortly.
        case fetching
        /// Its `min_interval` since the last attempt ends then.
        case minInterval(until: Date)
        /// The server's Retry-After, max-age or Expires ends then.
        case serverFloor(until: Date)
        /// The usage planner fetches it then, for this reason.
        case plan(until: Date, reason: String)
        /// The usage planner retries it then, after this many failures in a row.
        case backoff(until: Date, failures: Int)
        /// Its own budget (`perDay` per rolling 24 hours, `used` of them) has room again then.
        case budget(until: Date, used: Int, perDay: Int)
        /// `global_budget` (`budget` usage-planned fetches per rolling 24 hours of all
        /// handlers, `used` of them) has room again then.
        case globalBudget(until: Date, used: Int, budget: Int)
        /// Its conditions (network, power, battery) do not hold, for this reason.
        case conditions(String)
        /// The power profile is power-saver and its `power_saver` is "defer".
        case powerSaver
        /// The battery is critically low (`PowerState.criticallyLow`), this many percent.
        case batteryCritical(percent: Int)
        /// A deferred push waits for its `push_limit` until then.
        case pushLimit(until: Date)
        /// Its partial transfer resumes then (back-off after failures, or Retry-After).
        case transferRetry(until: Date)
        /// Due, it waits until then for a wake that runs something anyway (`WakeSharing`).
        case sharedWake(until: Date)
    }

    /// One handler as the rules see it.
    struct Row: Sendable, Equatable {
        /// When its schedule makes it eligible (in the past when overdue); nil when it is fetched
        /// only on request.
        var scheduledAt: Date?
        /// When it is next eligible: not in the past (an overdue handler is eligible now, not
        /// hours ago after a suspend or a clock step), and no later than its deferred push.
        var nextEligibleAt: Date?
        /// Its usage plan, when it learns its usage.
        var plan: FetchPlanner.Decision?
        /// Everything that holds it back now, in the order the rules apply them.
        var holds: [Hold]

        /// Why its scheduled fetch waits (its conditions, power-saver, a critically low
        /// battery), if it does.
        var waitingFor: String? {
            let reasons = holds.compactMap(\.waitReason)
            return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
        }
    }

    /// What a scheduled fetch of `handler` waits for, from `input`: the holds that end when the
    /// machine's state changes (a watcher then asks for a wake), not at a date. A critically low
    /// battery holds every handler back, whatever its own conditions: a fetch then could cost
    /// the last minutes of work.
    static func waits(of handler: HandlerConfig, in input: EligibilityInput) -> [Hold] {
        var holds: [Hold] = []
        if let reason = input.unmetConditions[handler.name] { holds.append(.conditions(reason)) }
        if input.powerSaver, handler.powerSaver == .deferFetch { holds.append(.powerSaver) }
        if let percent = input.criticalBatteryPercent { holds.append(.batteryCritical(percent: percent)) }
        return holds
    }

    /// Why each handler that waits (`waits(of:in:)`) does, as the journal and the status line
    /// say it; handlers that wait for nothing are absent.
    static func waitReasons(_ input: EligibilityInput) -> [String: String] {
        guard !input.unmetConditions.isEmpty || input.powerSaver || input.criticalBatteryPercent != nil else { return [:] }
        var reasons: [String: String] = [:]
        for handler in input.handlers {
            let words = waits(of: handler, in: input).compactMap(\.waitReason)
            if !words.isEmpty { reasons[handler.name] = words.joined(separator: "; ") }
        }
        return reasons
    }

    /// How the rules see `handler` (one of `input.handlers`).
    func row(of handler: HandlerConfig) -> Row {
        let name = handler.name, now = input.now, dueBy = input.dueBy
        let state = input.states[name]
        let plan = input.plans[name]
        let scheduled = Scheduler.nextEligible(handler, state: state, now: now, planned: plan?.date)
        let push = input.waitingPushes[name]
        let next = [scheduled.map { max($0, now) }, push?.dueAt].compactMap { $0 }.min()
        var holds: [Hold] = []
        if !handler.enabled { holds.append(.disabled) }
        if handler.minInterval == .never { holds.append(.onRequestOnly) }
        if input.isBusy(name) { holds.append(.fetching) }
        let scheduledHandler = handler.enabled && handler.minInterval != .never
        if scheduledHandler {
            // A usage plan replaces the min_interval rule: the planner keeps that floor itself.
            if let plan {
                holds += planHolds(plan, of: name)
            } else if case .seconds(let seconds) = handler.minInterval,
                      let last = Scheduler.lastAttempt(state, now: now), last.addingTimeInterval(seconds) > dueBy {
                holds.append(.minInterval(until: last.addingTimeInterval(seconds)))
            }
            if let floor = Scheduler.serverFloor(of: handler, state: state, now: now), floor > dueBy {
                holds.append(.serverFloor(until: floor))
            }
            // Due (by its floor, or its plan), it waits for a wake to share.
            if plan.map({ $0.date <= dueBy }) ?? true, !input.isBusy(name),
               let window = Scheduler.window(handler, state: state, now: now, planned: plan?.date,
                                             floor: input.planFloors[name], sharing: input.sharing),
               window.opens <= dueBy, window.closes > dueBy {
                holds.append(.sharedWake(until: window.closes))
            }
        }
        // For scheduled handlers and resuming transfers, which the wake defers alike; one run on
        // request alone waits for nothing.
        if scheduledHandler || input.transferResumes[name] != nil { holds += Self.waits(of: handler, in: input) }
        if let push, push.dueAt > dueBy { holds.append(.pushLimit(until: push.dueAt)) }
        if let resume = input.transferResumes[name], resume > dueBy { holds.append(.transferRetry(until: resume)) }
        return Row(scheduledAt: scheduled, nextEligibleAt: next, plan: plan, holds: holds)
    }

    /// What holds a usage-planned handler back: its own budget, the shared one, and the plan
    /// itself (a retry after failures, or a fetch before a predicted use).
    private func planHolds(_ plan: FetchPlanner.Decision, of name: String) -> [Hold] {
        let now = input.now, dueBy = input.dueBy
        var holds: [Hold] = []
        if let budget = input.budgets[name], let freesAt = budget.freesAt, freesAt > dueBy {
            holds.append(.budget(until: freesAt, used: budget.used, perDay: budget.perDay))
        }
        if let global = input.globalBudget, let floor = UsagePlanning.floor(of: global), floor > now {
            holds.append(.globalBudget(until: floor, used: global.recent.count, budget: global.budget))
        }
        if plan.date > dueBy {
            if let failures = plan.retryAfterFailures {
                holds.append(.backoff(until: plan.date, failures: failures))
            } else {
                holds.append(.plan(until: plan.date, reason: plan.reason))
            }
        }
        return holds
    }

    /// The enabled handler eligible soonest on its schedule (not before now), for the status line.
    func soonest() -> (name: String, date: Date)? {
        input.handlers.lazy.filter(\.enabled).compactMap { handler in
            Scheduler.nextEligible(handler, state: self.input.states[handler.name], now: self.input.now,
                                   planned: self.input.plans[handler.name]?.date).map { (handler.name, max($0, self.input.now)) }
        }.min { $0.date < $1.date }
    }
}

extension Eligibility.Hold {
    /// What a hold that waits for the machine's state says, in the words of the journal's
    /// "waiting" line and the status line; nil for the holds that end at a date or a setting.
    var waitReason: String? {
        switch self {
        case .conditions(let reason): reason
        case .powerSaver: "waiting for the power profile to leave power-saver (power_saver = \"defer\")"
        case .batteryCritical(let percent):
            "waiting for the battery: critically low (\(percent) %, every battery discharging)"
        default: nil
        }
    }
}
