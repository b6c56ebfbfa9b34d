import FetchdSystemd
import Foundation
import Logging

/// Keeps a transient systemd timer (`fetchd-planned.timer`) at the next planned fetch, so that
/// fetch happens on a systemd timer even when the heartbeat is coarse; `systemctl list-timers`
/// shows it. Where there is no manager bus (not started by systemd, containers, tests) or the
/// manager refuses, fetchd's own timer does the job and this says so once in the log.
actor PlannedWakeTimer {
    /// The transient timer's name; it starts the shipped `fetchd-planned.service`.
    static let timerName = "fetchd-planned.timer"

    private var bus: ManagerBus?
    private var planned: Date?
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
    func plan(_ date: Date?) {
        guard let bus, let date, date.timeIntervalSinceNow > 1 else { return }
        if let planned, abs(planned.timeIntervalSince(date)) < 1 { return }
        do {
            try bus.startTimer(Self.timerName, at: date, accuracy: .seconds(1),
                               description: "fetchd: next planned fetch")
            planned = date
            logger.debug("planned wake at \(date) on \(Self.timerName)")
        } catch {
            logger.notice("cannot set \(Self.timerName) (\(error)): planned wakes use fetchd's internal timer")
            self.bus = nil
        }
    }
}
