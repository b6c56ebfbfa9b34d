import FetchdConfig
import FetchdState
import Foundation

extension FetchCoordinator {
    /// The scheduling rules applied to what the coordinator knows at `now` (`Eligibility`):
    /// what a wake starts, when to wake next, and why each handler waits.
    func eligibility(now: Date) -> Eligibility { Eligibility(eligibilityInput(now: now)) }

    /// Everything the scheduling rules read, taken in one step: one read of the handler states,
    /// the pending pushes and the shared budget's use, the power supplies read again.
    func eligibilityInput(now: Date) -> EligibilityInput {
        let states = schedulingStates(now: now)
        refreshPower()
        var input = EligibilityInput(now: now, handlers: config.handlers,
                                     heartbeatSeconds: config.daemon.heartbeatSeconds, states: states)
        for (name, entry) in runtime {
            if entry.isRunning { input.running.insert(name) }
            if entry.takenByWake { input.takenByWake.insert(name) }
            if entry.pushTaken { input.pushTaken.insert(name) }
        }
        for handler in config.handlers {
            if let reason = unmetConditions(handler) { input.unmetConditions[handler.name] = reason }
        }
        noteMachineState(in: &input)
        input.globalBudget = plans.planning.globalBudgetUse(config, now: now)
        input.plans = plans.decisions(of: config.handlers, now: now, globalUse: input.globalBudget)
        input.planFloors = plans.floors
        let idle = config.handlers.lazy.filter { !input.isBusy($0.name) }
        input.transferResumes = pipeline.transfers.resumeDates(of: idle, states: states, now: now)
        input.waitingPushes = pushes.waiting()
        return input
    }

    /// The stored handler states as the scheduler should see them at `now`: an attempt dated
    /// after `now` (the wall clock was stepped back) as `HandlerRuntime.schedulingView` sees it.
    func schedulingStates(now: Date) -> [String: HandlerState] {
        var states = (try? state.allStates()) ?? [:]
        for (name, stored) in states where runtime[name]?.clockStep != nil || stored.lastAttemptAt ?? .distantPast > now {
            states[name] = runtime[name, default: HandlerRuntime()].schedulingView(of: stored, now: now)
        }
        return states
    }
}
