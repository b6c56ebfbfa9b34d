import FetchdConfig
import FetchdCore
@testable import FetchdDaemon
import FetchdPlanner
import FetchdState
import Foundation

/// Many handlers replayed on a virtual clock through the daemon's own wake rule (`Eligibility`,
/// the computation the wake, the timer and the status read) and its own usage planning
/// (`OnlinePlanning`, which `SimulatorParityTests` holds to the daemon's): the shared-wake bench
/// (`make bench-coalesce`) and its test. The daemon's loop, event by event: it wakes at
/// `Eligibility.next` (its heartbeats in between decide nothing else: the rule is a pure
/// function of the same input) and at each recorded use, runs what the wake makes ready, and
/// plans a usage-planned handler again after each of its uses and fetches. Fetches take no
/// time and always bring new data.
struct FleetReplay {
    /// A handler on a fixed `min_interval`, last fetched `phase` of an interval before the start.
    struct Interval {
        /// Its name.
        var name: String
        /// Its `min_interval`, in seconds.
        var intervalSeconds: Double
        /// Where in its interval it is at the start, in [0, 1).
        var phase: Double
    }

    /// A usage-planned handler and its uses (those before the start are its history).
    struct Planned {
        /// Its name.
        var name: String
        /// Its uses, sorted.
        var uses: [UsageEvent]
        /// How long before the start it was last fetched, in seconds.
        var lastFetchSecondsBefore: Double
    }

    /// What a replay did.
    struct Outcome {
        /// Each moment at which the scheduler ran at least one fetch.
        var wakes: [Date] = []
        /// Every fetch of each handler, the one before the start included, oldest first.
        var fetches: [String: [Date]] = [:]
        /// Timer wakes that ran nothing (the daemon's idle wake-ups, heartbeats aside).
        var idleTimerWakes = 0
        /// How much earlier than its plan each usage-planned fetch ran, in seconds.
        var earlySeconds: [Double] = []
    }

    /// The handlers on fixed intervals.
    var intervals: [Interval]
    /// The usage-planned handlers.
    var planned: [Planned]
    /// When the replay starts.
    var start: Date
    /// How long it runs, in days.
    var days: Double
    /// How far fetches may move to share wakes (`.none`: the run without sharing).
    var sharing: WakeSharing
    /// The usage-planned handlers' `min_interval`, in seconds (the parity test's).
    var plannedMinIntervalSeconds = 300.0

    /// The configurations: the interval handlers, then the usage-planned ones.
    var handlers: [HandlerConfig] {
        intervals.map { interval in
            var handler = HandlerConfig(name: interval.name, options: .doNothing)
            handler.minInterval = .seconds(interval.intervalSeconds)
            return handler
        } + planned.map { planned in
            var handler = HandlerConfig(name: planned.name, options: .doNothing)
            handler.minInterval = .seconds(plannedMinIntervalSeconds)
            handler.usage = [.explicit]
            return handler
        }
    }

    /// Runs the fleet from `start` for `days`.
    func run() -> Outcome {
        let handlers = handlers
        let end = start.addingTimeInterval(days * 86_400)
        var outcome = Outcome()
        var states: [String: HandlerState] = [:]
        for interval in intervals {
            let last = start.addingTimeInterval(-interval.phase * interval.intervalSeconds)
            states[interval.name] = Self.state(interval.name, at: last)
            outcome.fetches[interval.name] = [last]
        }
        var planning: [String: OnlinePlanning] = [:]
        var upcomingUses: [(date: Date, handler: String, event: UsageEvent)] = []
        for (offset, handler) in planned.enumerated() {
            let config = handlers[intervals.count + offset]
            var model = UsageModel()
            for use in handler.uses where use.date < start { model.add(use) }
            upcomingUses += handler.uses.filter { $0.date >= start && $0.date < end }.map { ($0.date, handler.name, $0) }
            let last = start.addingTimeInterval(-handler.lastFetchSecondsBefore)
            planning[handler.name] = OnlinePlanning(planner: Self.planner(for: config), model: model, firstFetch: last)
            states[handler.name] = Self.state(handler.name, at: last)
            outcome.fetches[handler.name] = [last]
        }
        upcomingUses.sort { $0.date < $1.date }
        var plans: [String: FetchPlanner.Decision] = [:], floors: [String: Date] = [:]
        func plan(_ name: String, at now: Date) {
            guard var handlerPlanning = planning[name] else { return }
            plans[name] = handlerPlanning.decide(now: now)
            floors[name] = handlerPlanning.floor(now: now)
            planning[name] = handlerPlanning
        }
        func input(at now: Date) -> EligibilityInput {
            var input = EligibilityInput(now: now, handlers: handlers, heartbeatSeconds: Defaults.heartbeatSeconds)
            input.states = states
            input.plans = plans
            input.planFloors = floors
            input.sharing = sharing
            return input
        }
        for name in planning.keys { plan(name, at: start) }
        var now = start, useIndex = 0, byTimer = false  // the daemon's start wake, not its timer
        while now < end {
            let ready = Eligibility(input(at: now)).ready
            if ready.isEmpty, byTimer { outcome.idleTimerWakes += 1 }
            if !ready.isEmpty { outcome.wakes.append(now) }
            for index in ready {
                let name = handlers[index].name
                states[name] = Self.state(name, at: now)
                outcome.fetches[name, default: []].append(now)
                if let plan = plans[name] { outcome.earlySeconds.append(plan.date.timeIntervalSince(now)) }
                if planning[name] != nil {
                    planning[name]?.fetched(at: now)
                    plan(name, at: now)
                }
            }
            // The daemon never waits less than this, even when something is overdue.
            let timer = max(Eligibility(input(at: now)).next ?? end, now.addingTimeInterval(0.5))
            if useIndex < upcomingUses.count, upcomingUses[useIndex].date <= timer {
                let use = upcomingUses[useIndex]
                useIndex += 1
                now = use.date
                planning[use.handler]?.use(use.event)
                plan(use.handler, at: now)
                byTimer = false
            } else {
                now = timer
                byTimer = true
            }
        }
        return outcome
    }

    /// A handler's planner with its limits, as the daemon makes it (`UsagePlanning.inputs`).
    static func planner(for handler: HandlerConfig) -> FetchPlanner {
        FetchPlanner(limits: .init(budgetPerDay: handler.budgetPerDay, minIntervalSeconds: handler.minIntervalSeconds,
                                   maxStalenessSeconds: handler.maxStalenessSeconds, leadSeconds: handler.leadSeconds))
    }

    private static func state(_ name: String, at date: Date) -> HandlerState {
        var state = HandlerState(name: name)
        state.lastAttemptAt = date
        state.lastSuccessAt = date
        return state
    }
}
