import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdState
import Foundation

extension FetchCoordinator {
    /// The status of the daemon and every handler; `markSeen` resets the new-data counters.
    public func status(markSeen: Bool) -> StatusReport {
        if markSeen { try? state.markSeen() }
        return statusView(now: Date()).report()
    }

    /// The status of `name` alone, with every reason it is not fetched now and its budget
    /// (`fetchctl status NAME`); nil when no such handler is loaded.
    public func status(of name: String) -> StatusReport? {
        config.handler(named: name).map { statusView(now: Date(), withBudgets: true).report(detailed: $0) }
    }

    /// A one-line summary for `systemctl status`: `5 handlers, 1 failing; next: weather at 08:50`.
    public func statusLine(now: Date = Date()) -> String { statusView(now: now).line() }

    /// What the wake clock does until the next wake, from one look: when to wake, what the
    /// systemd timer holds and the status line.
    func wakePlan(now: Date = Date()) -> WakePlan {
        let view = statusView(now: now)
        return WakePlan(madeAt: now, next: view.eligibility.next, wakeAt: view.eligibility.nextWake, statusLine: view.line())
    }

    /// What the reports are made from, as the coordinator sees it at `now`. `withBudgets` adds
    /// each planned handler's budget use, which only one handler's detailed status shows: the
    /// wakes, which make a view each, do without it.
    func statusView(now: Date, withBudgets: Bool = false) -> StatusView {
        var input = eligibilityInput(now: now)
        if withBudgets { input.budgets = plans.budgets }
        return StatusView(config: config, eligibility: Eligibility(input), rejectedReload: rejectedReload, instance: instance,
                          transfers: pipeline.transfers, snapshots: snapshots)
    }
}
