import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdState
import Foundation

extension FetchCoordinator {
    /// The status of the daemon and every handler; `markSeen` resets the new-data counters.
    public func status(markSeen: Bool) -> StatusReport {
        if markSeen { try? state.markSeen() }
        return statusView(now: Date()).report(transfer: pipeline.transfers.status(of:state:), snapshot: publishedSnapshot(of:))
    }

    /// A one-line summary for `systemctl status`: `5 handlers, 1 failing; next: weather at 08:50`.
    public func statusLine(now: Date = Date()) -> String { statusView(now: now).line() }

    /// The next time a handler becomes eligible, if any is in the future (no heartbeat cap).
    public func nextPlannedFetch(now: Date = Date()) -> Date? { statusView(now: now).nextPlannedFetch() }

    /// `statusLine` and `nextPlannedFetch` from one look (after each wake: one read of the
    /// states and pushes, not two).
    public func statusLineAndNextFetch(now: Date = Date()) -> (line: String, next: Date?) {
        let view = statusView(now: now)
        return (view.line(), view.nextPlannedFetch())
    }

    /// What the reports are made from, as the coordinator sees it at `now`.
    func statusView(now: Date) -> StatusView {
        StatusView(config: config, eligibility: eligibility(now: now), rejectedReload: rejectedReload, instance: instance)
    }

    /// The path of `name`'s latest published content, nil while it has none.
    nonisolated func publishedSnapshot(of name: String) -> String? {
        let path = snapshots.latestContentPath(of: name)
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }
}
