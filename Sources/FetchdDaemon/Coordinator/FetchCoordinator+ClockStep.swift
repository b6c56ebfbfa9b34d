import FetchdState
import Foundation

extension FetchCoordinator {
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
