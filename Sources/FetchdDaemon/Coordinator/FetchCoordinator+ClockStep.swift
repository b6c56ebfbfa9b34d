import FetchdState
import Foundation

extension FetchCoordinator {
    /// The stored handler states as the scheduler should see them at `now`.
    ///
    /// A last attempt dated after `now` means the wall clock was stepped back since. Such an
    /// attempt counts as made when the step was first seen, and stays so until the handler runs
    /// again: counting it as `now` at every look would put its next fetch `min_interval` after
    /// whatever now is, for ever, and the handler would not run until the clock caught up with
    /// the old date, hours later. A server's floor (Retry-After) moves back with its attempt.
    func schedulingStates(now: Date) -> [String: HandlerState] {
        var states = (try? state.allStates()) ?? [:]
        for (name, stored) in states {
            guard let recorded = stored.lastAttemptAt, recorded > now else {
                if runtime[name]?.clockStep != nil { runtime[name]?.clockStep = nil }  // it ran since
                continue
            }
            var seenAt = now
            if let earlier = runtime[name]?.clockStep, earlier.recorded == recorded, earlier.seenAt <= now {
                seenAt = earlier.seenAt
            }
            runtime[name, default: HandlerRuntime()].clockStep = (recorded, seenAt)
            var adjusted = stored
            adjusted.lastAttemptAt = seenAt
            adjusted.notBefore = stored.notBefore.map { $0.addingTimeInterval(seenAt.timeIntervalSince(recorded)) }
            states[name] = adjusted
        }
        return states
    }
}
