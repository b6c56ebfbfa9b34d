import Foundation

/// What the wake clock does until the next wake, from one look after each wake
/// (`FetchCoordinator.wakePlan(now:)`): when to wake, and what systemd shows.
struct WakePlan: Sendable, Equatable {
    /// When the plan was made.
    let madeAt: Date
    /// The next time a wake could start something (`Eligibility.next`): in the past when
    /// something is overdue, nil when nothing is scheduled.
    let next: Date?
    /// When the internal timer wakes: `next`, and at least every heartbeat.
    let wakeAt: Date
    /// The one-line summary for `systemctl status` (`STATUS=`).
    let statusLine: String

    /// The time the systemd timer should hold: `next` when it is in the future.
    var systemdTimer: Date? { next.flatMap { $0 > madeAt ? $0 : nil } }
}
