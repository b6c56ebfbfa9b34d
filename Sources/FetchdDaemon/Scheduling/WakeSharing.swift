import FetchdConfig
import FetchdCore
import FetchdState
import Foundation

/// How far the scheduler may move a scheduled fetch so that fetches share wakes: each wake of
/// the device costs battery whatever it runs, so ten fetches in one wake cost less than ten
/// wakes. A due fetch may wait a little (a share of its `min_interval`); a usage-planned one
/// may run a few minutes before or after its plan; within that window each runs at a point of
/// a shared grid (quarter hours) when the window holds one, so independent handlers meet there.
/// None ever runs inside its floor (`min_interval`, its budget, the server's Retry-After). A
/// wake runs every handler whose window is open as soon as one handler's time comes, so no
/// wake runs nothing.
public struct WakeSharing: Sendable, Equatable {
    /// How long a due fetch may wait for a shared wake, as a share of its `min_interval`.
    public var delayFraction: Double
    /// How much earlier than planned a usage-planned fetch may run, in seconds.
    public var earlySeconds: Double
    /// How much later than planned a usage-planned fetch may run, in seconds.
    public var lateSeconds: Double
    /// The grid wakes gather on, in seconds (0: none).
    public var gridSeconds: Double

    /// Creates a tolerance.
    public init(delayFraction: Double, earlySeconds: Double, lateSeconds: Double, gridSeconds: Double) {
        self.delayFraction = delayFraction
        self.earlySeconds = earlySeconds
        self.lateSeconds = lateSeconds
        self.gridSeconds = gridSeconds
    }

    /// The daemon's tolerance (`Defaults.wakeShare*`).
    public static let standard = WakeSharing(
        delayFraction: Defaults.wakeShareDelayFraction, earlySeconds: Defaults.wakeShareEarlySeconds,
        lateSeconds: Defaults.wakeShareLateSeconds, gridSeconds: Defaults.wakeShareGridSeconds)
    /// No sharing: every fetch wakes at the moment it becomes eligible (the bench's baseline).
    public static let none = WakeSharing(delayFraction: 0, earlySeconds: 0, lateSeconds: 0, gridSeconds: 0)

    /// How long a due fetch of `handler` on its `min_interval` may wait, in seconds: none for
    /// `minimum` (it follows the heartbeat) or `never`.
    func delaySeconds(for handler: HandlerConfig) -> Double {
        guard case .seconds(let seconds) = handler.minInterval else { return 0 }
        return seconds * delayFraction
    }

    /// The grid point in `from...to` nearest `near`, nil when the range holds none.
    func gridPoint(from: Date, to: Date, near: Date) -> Date? {
        guard gridSeconds > 0, from <= to else { return nil }
        let first = (from.timeIntervalSince1970 / gridSeconds).rounded(.up) * gridSeconds
        let last = (to.timeIntervalSince1970 / gridSeconds).rounded(.down) * gridSeconds
        guard first <= last else { return nil }
        let nearest = (near.timeIntervalSince1970 / gridSeconds).rounded() * gridSeconds
        return Date(timeIntervalSince1970: min(max(nearest, first), last))
    }
}

extension Scheduler {
    /// When a handler's scheduled fetch may run: from `opens` until `closes`. A wake that runs
    /// something runs every handler whose window is open; a wake comes at the earliest `closes`.
    public struct Window: Sendable, Equatable {
        /// The earliest it may run: its floor, or for a usage-planned handler a little before its plan.
        public var opens: Date
        /// When it runs unless a wake took it sooner: the grid point of its window nearest its
        /// time, else its plan, or for a handler on `min_interval` the end of its wait.
        public var closes: Date
    }

    /// `handler`'s window at `now`, nil when it is never scheduled. `planned` and `floor` as in
    /// `due`.
    public static func window(_ handler: HandlerConfig, state: HandlerState?, now: Date, planned: Date? = nil,
                              floor: Date? = nil, sharing: WakeSharing = .standard) -> Window? {
        guard let eligible = nextEligible(handler, state: state, now: now, planned: planned) else { return nil }
        guard planned != nil else {
            let latest = eligible.addingTimeInterval(sharing.delaySeconds(for: handler))
            return Window(opens: eligible, closes: sharing.gridPoint(from: eligible, to: latest, near: eligible) ?? latest)
        }
        // A first fetch runs at once, like any new handler's.
        guard let last = lastAttempt(state, now: now) else { return Window(opens: eligible, closes: eligible) }
        // Early, but never inside the handler's own floor nor before the server's.
        let own = floor ?? nextEligible(handler, state: state, now: now) ?? eligible
        let server = serverFloor(of: handler, state: state, now: now) ?? .distantPast
        let opens = min(max(eligible.addingTimeInterval(-sharing.earlySeconds), own, server), eligible)
        // Late, but never past `max_staleness`, the planner's promise.
        let ceiling = last.addingTimeInterval(handler.maxStalenessSeconds)
        let latest = max(eligible, min(eligible.addingTimeInterval(sharing.lateSeconds), ceiling))
        return Window(opens: opens, closes: sharing.gridPoint(from: opens, to: latest, near: eligible) ?? eligible)
    }

    /// The windows of `handlers`, in their order.
    static func windows(_ handlers: [HandlerConfig], states: [String: HandlerState], now: Date, planned: [String: Date],
                        floors: [String: Date], sharing: WakeSharing) -> [Window?] {
        handlers.map { handler in
            window(handler, state: states[handler.name], now: now, planned: planned[handler.name],
                   floor: floors[handler.name], sharing: sharing)
        }
    }
}
