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
/// `systemctl list-timers` shows it. The wake clock hands this each new plan (`plan`) and never
/// waits on the bus: this service's loop talks to the manager, through a `BusListener` whose
/// own queue makes the blocking calls.
///
/// Outside systemd fetchd's own timer does the job, and says so once. Where the manager refuses
/// this caller (access denied: an unprivileged daemon without polkit's rule) or the template is
/// not installed, the same, until the next reload asks again (`reconsider`). Any other failure
/// (no bus yet, the bus restarted, a busy manager) drops the connection and tries again on a new
/// one after 1 s, doubling to at most a minute, until the timer is set or the plan's time has
/// passed; a connection the bus closes is replaced at the next plan. Whenever no timer is held
/// (`activeTimerDate` is nil), fetchd's own timer makes the planned fetch; the log says so once
/// per outage.
final class PlannedWakeTimer: Service, Sendable {
    /// The shipped template of the planned timers.
    static let template = "fetchd-planned@.timer"
    /// What the log adds to a refusal.
    static let refusalHint = "; polkit's rule for the fetchd user (60-fetchd.rules) lets it start these timers"

    /// The instance of `template` that fires at `date` (rounded up to the second: a timer that
    /// fired a fraction early would find nothing due yet).
    static func timerName(at date: Date) -> String {
        "fetchd-planned@\(Int64(date.timeIntervalSince1970.rounded(.up))).timer"
    }

    private struct State {
        /// The plan to hold (nil: none).
        var wanted: Date?
        /// The timer systemd holds for us (nil: none set, fetchd's own timer is relied on).
        var held: Date?
        /// Refused or not installed: no attempts until `reconsider`.
        var refused = false
        /// The bus closed the connection: open a new one at the next attempt.
        var connectionClosed = false
        /// Told when `held` changes, so the wake clock's own timer follows (`onHeldChange`).
        var heldChanged: @Sendable () -> Void = {}
    }

    private let state = Mutex(State())
    private let changed = WakeSignal()
    private let underSystemd: Bool
    private let bus: BusConnection.Bus
    private let logger: Logger

    /// Talks to the manager that started fetchd: the user manager for a user service, else the
    /// system manager. `underSystemd` is false outside systemd: no bus is tried.
    init(underSystemd: Bool, userManager: Bool, logger: Logger) {
        self.underSystemd = underSystemd
        self.bus = userManager ? .user : .system
        self.logger = logger
        if !underSystemd { logger.notice("not started by systemd: planned wakes use fetchd's internal timer") }
    }

    /// The time of the planned timer systemd holds for us, if one is set: the internal timer
    /// then leaves that wake to systemd and only backs it up a little later.
    func activeTimerDate() -> Date? { state.withLock { $0.held } }

    /// Calls `body` whenever `activeTimerDate` changes (the wake clock times its wake again).
    func onHeldChange(_ body: @escaping @Sendable () -> Void) { state.withLock { $0.heldChanged = body } }

    /// Asks for the timer at `date` (nil: no plan). Returns at once; the service's loop sets it.
    func plan(_ date: Date?) {
        guard underSystemd else { return }
        state.withLock { $0.wanted = date }
        changed.signal()
    }

    /// After a reload: a refused or missing template may be allowed or installed now.
    func reconsider() {
        guard underSystemd else { return }
        state.withLock { $0.refused = false }
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
            var link = Link()
            var retry = BusReconnect()
            var failing = false
            while !Task.isCancelled {
                // A failed attempt waits out the backoff, or a new plan, whichever comes first.
                if retry.failures > 0 {
                    await self.changed.wait(atMost: .seconds(retry.delaySeconds))
                } else {
                    await self.changed.wait()
                }
                guard !Task.isCancelled else { break }
                switch await self.apply(&link) {
                case .unchanged:
                    retry.connected()
                case .set(let date):
                    if failing { self.logger.notice("planned wakes are on systemd's timer again (\(Self.timerName(at: date)))") }
                    failing = false
                    retry.connected()
                    self.logger.debug("planned wake at \(date) on \(Self.timerName(at: date))")
                case .refused(let error):
                    self.logger.notice("cannot start \(Self.template) (\(error)): planned wakes use fetchd's internal timer\(Self.isMissing(error) ? "" : Self.refusalHint)")
                    retry.connected()
                case .failed(let error):
                    if !failing {
                        self.logger.notice("cannot start \(Self.template) (\(error)): planned wakes use fetchd's internal timer until it can be started (trying again on a new connection, at most every minute)")
                    }
                    failing = true
                    retry.failed()
                }
            }
            link.listener?.close()
        }
    }

    private enum Attempt {
        case unchanged
        case set(Date)
        /// Asking again will not help until a reload: refused, or the template is not installed.
        case refused(BusError)
        case failed(BusError)
    }

    /// The D-Bus errors that say the template is not installed.
    static let missingErrors: Set<String> = ["org.freedesktop.systemd1.NoSuchUnit", "org.freedesktop.systemd1.LoadFailed"]
    /// The D-Bus errors after which asking again will not help: the caller may not start units,
    /// or no such unit can be loaded.
    static let finalErrors = missingErrors.union([
        "org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
    ])

    /// One attempt to hold the wanted plan. Plans less than a second ahead (or past, or none) are
    /// left to the internal timer, and a plan within a second of the held one is not sent again.
    private func apply(_ link: inout Link) async -> Attempt {
        let (wanted, held, refused, closed) = state.withLock { ($0.wanted, $0.held, $0.refused, $0.connectionClosed) }
        guard !refused else { return .unchanged }
        guard let wanted, wanted.timeIntervalSinceNow > 1 else {
            setHeld(nil)
            return .unchanged
        }
        if let held, abs(held.timeIntervalSince(wanted)) < 1 { return .unchanged }
        if closed {
            link.listener = nil
            state.withLock { $0.connectionClosed = false }
        }
        let name = Self.timerName(at: wanted)
        do throws(BusError) {
            let listener = try await link.open(bus) { [weak self] _ in
                self?.state.withLock { $0.connectionClosed = true }
            }
            try await Self.call(listener, "StartUnit", name)
            // The new timer first, then the old one stopped: no moment without one. One that
            // could not be stopped is asked again next time; if it fires meanwhile, that wake
            // finds nothing due.
            link.leftovers.remove(name)
            if let previous = link.heldUnit, previous != name { link.leftovers.insert(previous) }
            link.heldUnit = name
            for unit in link.leftovers.sorted() {
                if (try? await Self.call(listener, "StopUnit", unit)) != nil { link.leftovers.remove(unit) }
            }
            setHeld(wanted)
            // A newer plan that came meanwhile is taken on the next turn (the signal is kept).
            return .set(wanted)
        } catch {
            setHeld(nil)
            if let name = error.name, Self.finalErrors.contains(name) {
                state.withLock { $0.refused = true }
                return .refused(error)
            }
            // Whatever broke, the next attempt starts from a new connection.
            link.listener?.close()
            link.listener = nil
            return .failed(error)
        }
    }

    /// Whether `error` says the template is not installed (rather than that this caller may not start it).
    static func isMissing(_ error: BusError) -> Bool { error.name.map(missingErrors.contains) ?? false }

    /// Records the timer systemd holds and tells the wake clock when that changed.
    private func setHeld(_ date: Date?) {
        let notify = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.held != date else { return nil }
            state.held = date
            return state.heldChanged
        }
        notify?()
    }

    /// `member` (StartUnit, StopUnit) of the manager on `unit`, job mode "replace"; a StopUnit of
    /// a unit that is not loaded is not an error.
    private static func call(_ listener: BusListener, _ member: String, _ unit: String) async throws(BusError) {
        try await listener.perform { connection throws(BusError) in
            do throws(BusError) {
                _ = try connection.call(destination: "org.freedesktop.systemd1", path: "/org/freedesktop/systemd1",
                                        interface: "org.freedesktop.systemd1.Manager", member: member,
                                        arguments: [unit, "replace"])
            } catch where member == "StopUnit" && error.name == "org.freedesktop.systemd1.NoSuchUnit" {
                return
            }
        }
    }

    /// The connection to the manager (opened when first needed and again after a failure) and
    /// the timers started on it.
    private struct Link {
        var listener: BusListener?
        /// The instance holding the current plan.
        var heldUnit: String?
        /// Instances replaced but not yet stopped.
        var leftovers: Set<String> = []

        /// The open connection, or a new one.
        mutating func open(_ bus: BusConnection.Bus,
                           onClose: @escaping @Sendable (BusError) -> Void) async throws(BusError) -> BusListener {
            if let listener { return listener }
            let opened = try await BusListener.open(bus, label: "fetchd-planned-timer", setup: { _ in }, onClose: onClose)
            listener = opened
            return opened
        }
    }
}
