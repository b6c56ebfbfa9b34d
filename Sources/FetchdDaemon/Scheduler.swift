import FetchdConfig
import FetchdCore
import FetchdState
import Foundation

/// Decides which handlers are due and when to wake next. Pure functions of the config, the
/// recorded state and the time given, so they are tested without waiting.
///
/// The rule in this version is iOS's minimum fetch interval: a handler is eligible once
/// `min_interval` has passed since its last attempt (a floor, never a promise) and after any time
/// the server asked for (Retry-After, Cache-Control max-age, Expires); a handler that never ran
/// is eligible at once; `never` and disabled handlers run only when asked.
public enum Scheduler {
    /// The earliest time `handler` may run on a schedule, or nil if it is never scheduled.
    public static func nextEligible(_ handler: HandlerConfig, state: HandlerState?) -> Date? {
        guard handler.enabled, handler.minInterval != .never else { return nil }
        guard let lastAttempt = state?.lastAttemptAt else { return .distantPast }
        let floor: Date
        switch handler.minInterval {
        case .never: return nil
        case .minimum: floor = lastAttempt
        case .seconds(let seconds): floor = lastAttempt.addingTimeInterval(seconds)
        }
        // The server's own floor (Retry-After, max-age), unless the handler ignores hints.
        guard handler.honorServerHints, let notBefore = state?.notBefore else { return floor }
        return max(floor, notBefore)
    }

    /// Handlers eligible at `now`, in config order.
    public static func due(_ handlers: [HandlerConfig], states: [String: HandlerState], now: Date) -> [HandlerConfig] {
        handlers.filter { handler in
            guard let eligible = nextEligible(handler, state: states[handler.name]) else { return false }
            return eligible <= now
        }
    }

    /// When to wake next: the earliest future eligibility, but at least every heartbeat.
    /// Handlers already eligible wait for the heartbeat (they just ran, or are still running).
    public static func nextWake(_ handlers: [HandlerConfig], states: [String: HandlerState], now: Date,
                                heartbeatSeconds: Double) -> Date {
        let heartbeat = now.addingTimeInterval(heartbeatSeconds)
        let upcoming = handlers.compactMap { nextEligible($0, state: states[$0.name]) }.filter { $0 > now }
        return min(upcoming.min() ?? heartbeat, heartbeat)
    }
}
