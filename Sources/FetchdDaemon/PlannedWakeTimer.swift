import FetchdSystemd
import Foundation
import Logging

/// Keeps a transient systemd timer (`fetchd-planned.timer`) at the next planned fetch, so that
/// fetch happens on a systemd timer even when the heartbeat is coarse; `systemctl list-timers`
/// shows it. Where there is no manager bus (not started by systemd, containers, tests) or the
/// manager refuses this caller (access denied: an unprivileged daemon without polkit's leave),
/// fetchd's own timer does the job and this says so once. Any other failure (a busy manager, a
/// restarted one) holds for that plan only: the next plan asks again.
actor PlannedWakeTimer {
    /// The transient timer's name; it starts the shipped `fetchd-planned.service`.
    static let timerName = "fetchd-planned.timer"
    /// How often to ask again while the stopped timer is still loaded, and how long to wait
    /// between: the manager unloads it on a later turn of its loop, usually within milliseconds.
    static let unitStillLoadedRetries = 20
    static let unitStillLoadedRetryMilliseconds = 50

    private var bus: ManagerBus?
    private var planned: Date?
    /// The last attempt to set the timer failed (said once in the log, until one succeeds).
    private var failing = false
    /// Counts `plan` calls: one that waited to try again gives up when a newer plan came meanwhile.
    private var generation = 0
    private let logger: Logger

    /// Connects to the manager that started fetchd: the user manager for a user service,
    /// else the system manager. `underSystemd` is false outside systemd: no bus is tried.
    init(underSystemd: Bool, userManager: Bool, logger: Logger) {
        self.logger = logger
        guard underSystemd else {
            logger.notice("not started by systemd: planned wakes use fetchd's internal timer")
            return
        }
        do {
            bus = try ManagerBus(user: userManager)
        } catch {
            logger.notice("no systemd manager bus (\(error)): planned wakes use fetchd's internal timer")
        }
    }

    /// The time of the planned timer systemd holds for us, if one is set: the internal timer
    /// then leaves that wake to systemd and only backs it up a little later.
    func activeTimerDate() -> Date? { bus == nil ? nil : planned }

    /// Moves the timer to `date`. Plans less than a second ahead are left to the internal timer,
    /// and a plan within a second of the current one is not re-sent.
    func plan(_ date: Date?) async {
        guard let bus, let date, date.timeIntervalSinceNow > 1 else { return }
        if let planned, abs(planned.timeIntervalSince(date)) < 1 { return }
        generation += 1
        let mine = generation
        // Until the new timer is set, the internal timer is the one to rely on.
        planned = nil
        do {
            // "replace" does not restart a transient unit: the old one is stopped, then made anew.
            try bus.stopUnit(Self.timerName)
            var attempt = 0
            while true {
                do {
                    try bus.startTimer(Self.timerName, at: date, accuracy: .seconds(1), description: "fetchd: next planned fetch")
                    break
                } catch where error.unitStillLoaded && attempt < Self.unitStillLoadedRetries {
                    attempt += 1
                    try? await Task.sleep(for: .milliseconds(Self.unitStillLoadedRetryMilliseconds))
                    guard generation == mine else { return }  // a newer plan replaces this one
                }
            }
            planned = date
            if failing { logger.notice("\(Self.timerName) set again: planned wakes are on systemd's timer") }
            failing = false
            logger.debug("planned wake at \(date) on \(Self.timerName)")
        } catch where error.isRefusal {
            logger.notice("cannot set \(Self.timerName) (\(error)): planned wakes use fetchd's internal timer")
            self.bus = nil
        } catch {
            if !failing {
                logger.notice("cannot set \(Self.timerName) (\(error)): planned wakes use fetchd's internal timer until it can be set (asked again at each plan)")
            }
            failing = true
        }
    }
}
