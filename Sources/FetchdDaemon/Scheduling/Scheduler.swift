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
    /// A last attempt later than `now` (the wall clock was stepped back) counts as `now`.
    /// `planned` is the usage planner's time for a handler that learns its usage: it replaces
    /// the `min_interval` rule (the planner already keeps that floor).
    public static func nextEligible(_ handler: HandlerConfig, state: HandlerState?, now: Date = Date(),
                                    planned: Date? = nil) -> Date? {
        guard handler.enabled, handler.minInterval != .never else { return nil }
        let server = serverFloor(of: handler, state: state, now: now) ?? .distantPast
        if let planned { return max(planned, server) }
        guard let lastAttempt = lastAttempt(state, now: now) else { return .distantPast }
        let floor: Date
        switch handler.minInterval {
        case .never: return nil
        case .minimum: floor = lastAttempt
        case .seconds(let seconds): floor = lastAttempt.addingTimeInterval(seconds)
        }
        return max(floor, server)
    }

    /// The handler's last attempt as scheduling counts it: one dated after `now` (the wall
    /// clock was stepped back) counts as `now`.
    static func lastAttempt(_ state: HandlerState?, now: Date) -> Date? {
        state?.lastAttemptAt.map { min($0, now) }
    }

    /// The server's floor (Retry-After, max-age), nil when there is none or the handler ignores
    /// server hints. It was set as a delay after the last attempt, so when the wall clock was
    /// stepped back past that attempt it moves back with it: a one-hour Retry-After must not
    /// become four hours after a three-hour step back.
    static func serverFloor(of handler: HandlerConfig, state: HandlerState?, now: Date) -> Date? {
        guard handler.honorsServerHints, let notBefore = state?.notBefore else { return nil }
        guard let recorded = state?.lastAttemptAt, recorded > now else { return notBefore }
        return notBefore.addingTimeInterval(now.timeIntervalSince(recorded))
    }

    /// How close to its eligible time a handler counts as due: a wake planned for that very
    /// instant must not miss it by the microseconds the wake took to arrive.
    public static let dueTolerance: TimeInterval = 0.1

    /// How much earlier than planned a usage-planned handler may run, so that handlers planned
    /// close together share one wake (fewer device wake-ups) instead of waking the machine each.
    public static let coalesceSeconds: TimeInterval = 120

    /// Handlers eligible at `now`, in config order. A wake that runs something also takes the
    /// usage-planned handlers due within `coalesceSeconds`, if their `min_interval` allows.
    /// `floors` holds, per planned handler, the earliest it may run at all (its `min_interval`
    /// and its own budget); without one, its `min_interval` alone.
    public static func due(_ handlers: [HandlerConfig], states: [String: HandlerState], now: Date,
                           planned: [String: Date] = [:], floors: [String: Date] = [:]) -> [HandlerConfig] {
        dueIndices(handlers, states: states, now: now, planned: planned, floors: floors).map { handlers[$0] }
    }

    /// `due`'s handlers as their places in `handlers`: a wake of thousands chooses among places
    /// rather than copies of their configurations (600 bytes each).
    public static func dueIndices(_ handlers: [HandlerConfig], states: [String: HandlerState], now: Date,
                                  planned: [String: Date] = [:], floors: [String: Date] = [:]) -> [Int] {
        let eligible = handlers.map { handler in
            nextEligible(handler, state: states[handler.name], now: now, planned: planned[handler.name])
        }
        let strict = eligible.map { $0.map { $0 <= now.addingTimeInterval(dueTolerance) } ?? false }
        guard strict.contains(true) else { return [] }
        return handlers.indices.filter { index in
            guard let date = eligible[index] else { return false }
            if strict[index] { return true }
            let handler = handlers[index]
            guard planned[handler.name] != nil, date <= now.addingTimeInterval(coalesceSeconds) else { return false }
            // Early, but never inside the handler's own floor.
            let floor = floors[handler.name] ?? nextEligible(handler, state: states[handler.name], now: now) ?? .distantFuture
            return floor <= now.addingTimeInterval(dueTolerance)
        }
    }

    /// The earliest eligibility among `handlers` (pass only those that are not running), nil
    /// when none is scheduled. An overdue one gives a time in the past; `minimum` handlers are
    /// always eligible and so are left out unless planned: they follow the heartbeat ("as often
    /// as the daemon wakes").
    public static func upcoming(_ handlers: some Sequence<HandlerConfig>, states: [String: HandlerState], now: Date,
                                planned: [String: Date] = [:]) -> Date? {
        handlers.lazy.filter { $0.minInterval != .minimum || planned[$0.name] != nil }
            .compactMap { nextEligible($0, state: states[$0.name], now: now, planned: planned[$0.name]) }
            .min()
    }
}
