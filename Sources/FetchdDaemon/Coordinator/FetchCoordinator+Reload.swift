import FetchdConfig
import FetchdCore
import Foundation

extension FetchCoordinator {
    /// Puts a new configuration in force. Fetches in flight finish under the config they started
    /// with; removed handlers are simply no longer scheduled.
    public func apply(_ newConfig: LoadedConfig) {
        pipeline.resize(from: config.daemon, to: newConfig.daemon)
        config = newConfig
        rejectedReload = []
        // Budgets, sources or intervals may have changed: every plan is made again. Removed
        // handlers' entries go, unless a fetch, a wake or a push still counts on them.
        runtime = runtime.filter { newConfig.handler(named: $0.key) != nil || $0.value.isBusy }.mapValues { entry in
            var entry = entry
            entry.plan = nil
            return entry
        }
    }

    /// Records that a reload was rejected; `fetchctl status` and the status line show it.
    public func rejectReload(_ problems: [ConfigDiagnostic]) { rejectedReload = problems }

    /// A one-line summary for `systemctl status`: `5 handlers, 1 failing; next: weather at 08:50`.
    public func statusLine(now: Date = Date()) -> String {
        let states = schedulingStates(now: now)
        let planned = plannedDates(now: now)
        let enabled = config.handlers.filter(\.enabled)
        let failing = enabled.filter { (states[$0.name]?.consecutiveFailures ?? 0) > 0 }.count
        var parts = ["\(enabled.count) handler\(enabled.count == 1 ? "" : "s")"]
        if config.handlers.isEmpty && config.diagnostics.isEmpty {
            parts[0] = "no handlers configured (add a handler file to \(config.handlersDirectory), then reload)"
        }
        if failing > 0 { parts[0] += ", \(failing) failing" }
        if !config.diagnostics.isEmpty { parts[0] += ", \(config.diagnostics.count) invalid" }
        let upcoming = enabled.compactMap { handler in
            Scheduler.nextEligible(handler, state: states[handler.name], now: now, planned: planned[handler.name])
                .map { (handler.name, max($0, now)) }
        }.min { $0.1 < $1.1 }
        if let (name, date) = upcoming {
            parts.append("next: \(name) at \(SystemTimeZone.hourMinute(date))")
        }
        if let problem = rejectedReload.first {
            parts.append("reload rejected: \(problem.file):\(problem.line ?? 0)")
        }
        return parts.joined(separator: "; ")
    }

    /// The next time a handler becomes eligible, if any is in the future (no heartbeat cap).
    public func nextPlannedFetch(now: Date = Date()) -> Date? {
        let states = schedulingStates(now: now)
        let planned = plannedDates(now: now)
        let scheduled = config.handlers.compactMap {
            Scheduler.nextEligible($0, state: states[$0.name], now: now, planned: planned[$0.name])
        }
        // Deferred pushes too: systemd's timer should wake us for them as for any planned fetch.
        return (scheduled + [nextPushDue()].compactMap { $0 }).filter { $0 > now }.min()
    }

    /// Answers only when the actor is free: the watchdog's proof that the loop is not stuck.
    func heartbeat() {}

    /// Blocks the actor for good, to test that a stalled daemon is restarted by the watchdog.
    /// Reachable only through fetchd's hidden `--debug-stall-after` flag.
    func debugStall() {
        logger.warning("debug: stalling the main loop on purpose (--debug-stall-after)")
        while true { sleep(3600) }
    }
}
