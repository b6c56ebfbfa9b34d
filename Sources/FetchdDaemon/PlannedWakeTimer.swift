import FetchdSystemd
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Keeps a transient systemd timer (`fetchd-planned.timer`) at the next planned fetch, so that
/// fetch happens on a systemd timer even when the heartbeat is coarse; `systemctl list-timers`
/// shows it. The scheduler hands it each new plan (`plan`) and never waits on the bus: this
/// service's own loop talks to the manager.
///
/// Outside systemd, or where the manager refuses this caller (access denied: an unprivileged
/// daemon without polkit's leave), fetchd's own timer does the job and this says so once. Any
/// other failure (no bus yet, the bus restarted, the connection dropped, a busy manager) drops
/// the connection and tries again on a new one after 1 s, doubling to at most a minute, until
/// the timer is set or the plan's time has passed; meanwhile fetchd's own timer makes the planned
/// fetch (`activeTimerDate` is nil), and the log says so once until the timer is set again.
final class PlannedWakeTimer: Service, Sendable {
    /// The transient timer's name; it starts the shipped `fetchd-planned.service`.
    static let timerName = "fetchd-planned.timer"
    /// How often to ask again while the stopped timer is still loaded, and how long to wait
    /// between: the manager unloads it on a later turn of its loop, usually within milliseconds.
    static let unitStillLoadedRetries = 20
    static let unitStillLoadedRetryMilliseconds = 50
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

    /// Sets the timer at each new plan until graceful shutdown.
    func run() async {
        guard underSystemd else { return }
        await cancelWhenGracefulShutdown {
            var connection = Connection(user: self.userManager)
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
                switch await self.apply(&connection) {
                case .unchanged:
                    retry.connected()
                case .set(let date):
                    if failing { self.logger.notice("\(Self.timerName) set again: planned wakes are on systemd's timer") }
                    failing = false
                    retry.connected()
                    self.logger.debug("planned wake at \(date) on \(Self.timerName)")
                case .refused(let error):
                    self.logger.notice("cannot set \(Self.timerName) (\(error)): planned wakes use fetchd's internal timer")
                    return
                case .failed(let error):
                    if !failing {
                        self.logger.notice("cannot set \(Self.timerName) (\(error)): planned wakes use fetchd's internal timer until it can be set (trying again on a new connection, at most every minute)")
                    }
                    failing = true
                    retry.failed()
                }
            }
        }
    }

    private enum Attempt {
        case unchanged
        case set(Date)
        case refused(ManagerBus.Failure)
        case failed(ManagerBus.Failure)
    }

    /// One attempt to hold the wanted plan. Plans less than a second ahead (or past) are left to
    /// the internal timer, and a plan within a second of the held one is not sent again.
    private func apply(_ connection: inout Connection) async -> Attempt {
        let (wanted, held) = state.withLock { ($0.wanted, $0.held) }
        guard let wanted, wanted.timeIntervalSinceNow > 1 else { return .unchanged }
        if let held, abs(held.timeIntervalSince(wanted)) < 1 { return .unchanged }
        // Until the new timer is set, the internal timer is the one to rely on.
        state.withLock { $0.held = nil }
        do {
            let bus = try connection.open()
            // "replace" does not restart a transient unit: the old one is stopped, then made anew.
            try bus.stopUnit(Self.timerName)
            var attempt = 0
            while true {
                do {
                    try bus.startTimer(Self.timerName, at: wanted, accuracy: .seconds(1), description: "fetchd: next planned fetch")
                    break
                } catch where error.unitStillLoaded && attempt < Self.unitStillLoadedRetries {
                    attempt += 1
                    try? await Task.sleep(for: .milliseconds(Self.unitStillLoadedRetryMilliseconds))
                }
            }
            state.withLock { $0.held = wanted }
            // A newer plan that came meanwhile is taken on the next turn (the signal is kept).
            return .set(wanted)
        } catch where error.isRefusal {
            return .refused(error)
        } catch {
            // Whatever broke (the bus restarted, the connection dropped), the next attempt starts
            // from a new connection.
            connection.close()
            return .failed(error)
        }
    }

    /// The connection to the manager, opened when first needed and again after a failure.
    private struct Connection {
        let user: Bool
        private var bus: ManagerBus?

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
