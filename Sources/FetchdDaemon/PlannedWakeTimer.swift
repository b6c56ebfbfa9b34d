import FetchdSystemd
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Keeps a systemd timer at the next planned fetch: the instance of the shipped
/// `fetchd-planned@.timer` named by the fetch's time in seconds since the epoch
/// (`fetchd-planned@1764061200.timer`), which starts `fetchd-planned.service`. A template rather
/// than a transient unit, so that a polkit rule can let the unprivileged daemon start and stop
/// these timers and nothing else (systemd 252 tells polkit no unit name for a transient one).
/// `systemctl list-timers` shows it. The scheduler hands this each new plan (`plan`) and never
/// waits on the bus: this service's own loop talks to the manager.
///
/// Outside systemd, or where the manager refuses this caller (access denied: an unprivileged
/// daemon without polkit's leave), fetchd's own timer does the job and this says so once. Any
/// other failure (no bus yet, the bus restarted, the connection dropped, a busy manager) drops
/// the connection and tries again on a new one after 1 s, doubling to at most a minute, until
/// the timer is set or the plan's time has passed; meanwhile fetchd's own timer makes the planned
/// fetch (`activeTimerDate` is nil), and the log says so once until the timer is set again.
final class PlannedWakeTimer: Service, Sendable {
    /// The shipped template of the planned timers.
    static let template = "fetchd-planned@.timer"

    /// The instance of `template` that fires at `date` (rounded up to the second: a timer that
    /// fired a fraction early would find nothing due yet).
    static func timerName(at date: Date) -> String {
        "fetchd-planned@\(Int64(date.timeIntervalSince1970.rounded(.up))).timer"
    }
    /// How long a call to the manager may take before it counts as failed, in seconds.
    static let callTimeoutSeconds = 10.0

    private struct State {
        /// The plan to hold (nil: none).
        var wanted: Date?
        /// The timer systemd holds for us (nil: none set, fetchd's own timer is relied on).
        var held: Date?
    }

    private let state = Mutex(State())
    private let changed = WakeSignal()
    private let underSystemd: Bool
    private let userManager: Bool
    private let logger: Logger

    /// Talks to the manager that started fetchd: the user manager for a user service, else the
    /// system manager. `underSystemd` is false outside systemd: no bus is tried.
    init(underSystemd: Bool, userManager: Bool, logger: Logger) {
        self.underSystemd = underSystemd
        self.userManager = userManager
        self.logger = logger
        if !underSystemd { logger.notice("not started by systemd: planned wakes use fetchd's internal timer") }
    }

    /// The time of the planned timer systemd holds for us, if one is set: the internal timer
    /// then leaves that wake to systemd and only backs it up a little later.
    func activeTimerDate() -> Date? { state.withLock { $0.held } }

    /// Asks for the timer at `date` (nil: no plan). Returns at once; the service's loop sets it.
    func plan(_ date: Date?) {
        guard underSystemd else { return }
        state.withLock { $0.wanted = date }
        changed.signal()
    }

    /// Sets the timer at each new plan until graceful shutdown. It returns only then, even when
    /// it has nothing to do: a service that returns stops the whole group.
    func run() async {
        guard underSystemd else {
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown {
            var link = Link(user: self.userManager)
            var retry = BusReconnect()
            var failing = false
            while !Task.isCancelled {
                // A failed attempt waits out the backoff, or a new plan, whichever comes first.
                if retry.failures > 0 {
                    await self.changed.wait(atMost: .seconds(retry.delaySeconds))
                } else {
                    await self.changed.wait()
                }
                guard !Task.isCancelled else { return }
                switch self.apply(&link) {
                case .unchanged:
                    retry.connected()
                case .set(let date):
                    if failing { self.logger.notice("planned wakes are on systemd's timer again (\(Self.timerName(at: date)))") }
                    failing = false
                    retry.connected()
                    self.logger.debug("planned wake at \(date) on \(Self.timerName(at: date))")
                case .refused(let error):
                    self.logger.notice("cannot start \(Self.template) (\(error)): planned wakes use fetchd's internal timer\(error.isRefusal ? Self.refusalHint : "")")
                    try? await gracefulShutdown()
                    return
                case .failed(let error):
                    if !failing {
                        self.logger.notice("cannot start \(Self.template) (\(error)): planned wakes use fetchd's internal timer until it can be started (trying again on a new connection, at most every minute)")
                    }
                    failing = true
                    retry.failed()
                }
            }
        }
    }

    /// What the log adds to a refusal.
    static let refusalHint = "; polkit's rule for the fetchd user (60-fetchd.rules) lets it start these timers"

    private enum Attempt {
        case unchanged
        case set(Date)
        /// Asking again will not help: refused, or the template is not installed.
        case refused(ManagerBus.Failure)
        case failed(ManagerBus.Failure)
    }

    /// One attempt to hold the wanted plan. Plans less than a second ahead (or past) are left to
    /// the internal timer, and a plan within a second of the held one is not sent again.
    private func apply(_ link: inout Link) -> Attempt {
        let (wanted, held) = state.withLock { ($0.wanted, $0.held) }
        guard let wanted, wanted.timeIntervalSinceNow > 1 else { return .unchanged }
        if let held, abs(held.timeIntervalSince(wanted)) < 1 { return .unchanged }
        let name = Self.timerName(at: wanted)
        do {
            let bus = try link.open()
            try bus.startUnit(name)
            // The new timer first, then the old one stopped: no moment without one. A timer
            // that could not be stopped is asked again next time; if it fires meanwhile, that
            // wake finds nothing due.
            if let previous = link.heldUnit, previous != name { link.leftovers.insert(previous) }
            link.heldUnit = name
            for unit in link.leftovers.sorted() where (try? bus.stopUnit(unit)) != nil { link.leftovers.remove(unit) }
            state.withLock { $0.held = wanted }
            // A newer plan that came meanwhile is taken on the next turn (the signal is kept).
            return .set(wanted)
        } catch where error.isRefusal || error.isMissingUnit {
            state.withLock { $0.held = nil }
            return .refused(error)
        } catch {
            // Whatever broke (the bus restarted, the connection dropped), the next attempt starts
            // from a new connection, and until a timer is set again fetchd's own timer is relied on.
            state.withLock { $0.held = nil }
            link.close()
            return .failed(error)
        }
    }

    /// The connection to the manager (opened when first needed and again after a failure) and
    /// the timers started on it.
    private struct Link {
        let user: Bool
        private var bus: ManagerBus?
        /// The instance holding the current plan.
        var heldUnit: String?
        /// Instances replaced but not yet stopped.
        var leftovers: Set<String> = []

        init(user: Bool) { self.user = user }

        /// The open connection, or a new one.
        mutating func open() throws(ManagerBus.Failure) -> ManagerBus {
            if let bus, bus.isOpen { return bus }
            let opened = try ManagerBus(user: user, callTimeoutSeconds: PlannedWakeTimer.callTimeoutSeconds)
            bus = opened
            return opened
        }

        /// Drops the connection.
        mutating func close() { bus = nil }
    }
}
