import FetchdState
import Foundation

extension HandlerRuntime {
    /// `stored` as the scheduler should see it at `now`.
    ///
    /// A last attempt dated after `now` means the wall clock was stepped back since. Such an
    /// attempt counts as made when the step was first seen, and stays so until the handler runs
    /// again: counting it as `now` at every look would put its next fetch `min_interval` after
    /// whatever now is, for ever, and the handler would not run until the clock caught up with
    /// the old date, hours later. A server's floor (Retry-After) moves back with its attempt.
    mutating func schedulingView(of stored: HandlerState, now: Date) -> HandlerState {
        guard let recorded = stored.lastAttemptAt, recorded > now else {
            clockStep = nil  // it ran since
            return stored
        }
        var seenAt = now
        if let earlier = clockStep, earlier.recorded == recorded, earlier.seenAt <= now {
            seenAt = earlier.seenAt
        }
        clockStep = (recorded, seenAt)
        var adjusted = stored
        adjusted.lastAttemptAt = seenAt
        adjusted.notBefore = stored.notBefore.map { $0.addingTimeInterval(seenAt.timeIntervalSince(recorded)) }
        return adjusted
    }
}
