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
/// is eligible at once; `never` and disabled handlers run only when asked. An eligible fetch
/// may wait a little, and a planned one move a few minutes, so that fetches share wakes
/// (`WakeSharing`, `Window`).
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

    /// Handlers a wake at `now` runs, in config order: none until one of them reaches the end
    /// of its window (`Window.closes`), then every one whose window is open, so fetches share
    /// wakes (`WakeSharing`). `floors` holds, per planned handler, the earliest it may run at
    /// all (its `min_interval` and its own budget); without one, its `min_interval` alone.
    public static func due(_ handlers: [HandlerConfig], states: [String: HandlerState], now: Date,
                           planned: [String: Date] = [:], floors: [String: Date] = [:],
                           sharing: WakeSharing = .standard) -> [HandlerConfig] {
        dueIndices(handlers, states: states, now: now, planned: planned, floors: floors, sharing: sharing).map { handlers[$0] }
    }

    /// `due`'s handlers as their places in `handlers`: a wake of thousands chooses among places
    /// rather than copies of their configurations (600 bytes each).
    public static func dueIndices(_ handlers: [HandlerConfig], states: [String: HandlerState], now: Date,
                                  planned: [String: Date] = [:], floors: [String: Date] = [:],
                                  sharing: WakeSharing = .standard) -> [Int] {
        let windows = windows(handlers, states: states, now: now, planned: planned, floors: floors, sharing: sharing)
        let dueBy = now.addingTimeInterval(dueTolerance)
        let open = openIndices(windows, dueBy: dueBy)
        guard open.contains(where: { windows[$0]!.closes <= dueBy }) else { return [] }
        return open
    }

    /// The places in `windows` whose window is open by `dueBy` and that `include` keeps, in
    /// config order: what a wake may run (`dueIndices`, `Eligibility`).
    static func openIndices(_ windows: [Window?], dueBy: Date, where include: (Int) -> Bool = { _ in true }) -> [Int] {
        windows.indices.filter { windows[$0].map { $0.opens <= dueBy } == true && include($0) }
    }

    /// Whether `handler` has a time of its own for the next wake (`upcoming`, `Eligibility.next`):
    /// `minimum` handlers are always eligible and follow the heartbeat unless planned.
    static func hasSchedule(_ handler: HandlerConfig, planned: [String: Date]) -> Bool {
        handler.minInterval != .minimum || planned[handler.name] != nil
    }

    /// When a wake must come for `handlers` (pass only those that are not running): the earliest
    /// end of their windows (`Window.closes`), so the wake waits for the handler that can wait
    /// least and the others open by then share it. Nil when none is scheduled; an overdue one
    /// gives a time in the past. `minimum` handlers are always eligible and so are left out
    /// unless planned: they follow the heartbeat ("as often as the daemon wakes").
    public static func upcoming(_ handlers: some Sequence<HandlerConfig>, states: [String: HandlerState], now: Date,
                                planned: [String: Date] = [:], sharing: WakeSharing = .standard) -> Date? {
        handlers.lazy.filter { hasSchedule($0, planned: planned) }
            .compactMap { window($0, state: states[$0.name], now: now, planned: planned[$0.name], sharing: sharing)?.closes }
            .min()
    }
}
