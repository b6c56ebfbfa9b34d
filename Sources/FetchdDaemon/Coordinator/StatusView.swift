import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdPlanner
import FetchdState
import Foundation

/// One look at what the coordinator knows, taken on the actor in one step
/// (`FetchCoordinator.statusView(now:)`), from which the reports are made off it: what
/// `fetchctl status` shows, systemd's one-line `STATUS=`, and the next fetch the systemd timer
/// should wake for.
struct StatusView {
    /// The configuration in force.
    let config: LoadedConfig
    /// When the look was taken.
    let now: Date
    /// The stored states as the scheduler sees them (a clock stepped back accounted for).
    let states: [String: HandlerState]
    /// The next planned fetch of each usage-planned handler, held back by `global_budget` when
    /// it is spent.
    let plans: [String: FetchPlanner.Decision]
    /// The handlers running now.
    let running: Set<String>
    /// The pushes waiting for their handler's `push_limit`, by handler.
    let waitingPushes: [String: PendingPush]
    /// Why each scheduled handler's fetch waits (its conditions unmet), by handler.
    let waitingFor: [String: String]
    /// When the earliest deferred push is due.
    let nextPushDue: Date?
    /// Problems of the last reload, when it was rejected.
    let rejectedReload: [ConfigDiagnostic]
    /// This daemon process.
    let instance: DaemonInstance

    /// When `handler` becomes eligible: not in the past (an overdue handler is eligible now, not
    /// hours ago after a suspend or a clock step, nor at the daemon's start, which a clock stepped
    /// back puts hours ahead), and no later than its deferred push.
    func nextEligible(_ handler: HandlerConfig) -> Date? {
        let scheduled = scheduledEligible(handler).map { max($0, now) }
        return [scheduled, waitingPushes[handler.name]?.dueAt].compactMap { $0 }.min()
    }

    /// When the scheduler finds `handler` eligible, by its state and plan (in the past when overdue).
    private func scheduledEligible(_ handler: HandlerConfig) -> Date? {
        Scheduler.nextEligible(handler, state: states[handler.name], now: now, planned: plans[handler.name]?.date)
    }

    /// The daemon and every handler, as `fetchctl status` shows them. `transfer` gives a
    /// transfer handler's download, `snapshot` the path of a handler's published content.
    func report(transfer: (HandlerConfig, HandlerState?) -> TransferStatus?,
                snapshot: (String) -> String?) -> StatusReport {
        let handlers = config.handlers.map { handler in
            let stored = states[handler.name]
            var status = HandlerStatus(name: handler.name, kind: handler.kind.rawValue, enabled: handler.enabled)
            status.running = running.contains(handler.name)
            if let stored {
                status.lastResult = stored.lastResult
                status.lastReason = stored.lastReason
                status.lastAttemptAt = stored.lastAttemptAt
                status.lastSuccessAt = stored.lastSuccessAt
                status.newDataSinceLastLook = stored.newDataUnseen
                status.consecutiveFailures = stored.consecutiveFailures
            }
            status.nextEligibleAt = nextEligible(handler)
            status.snapshotPath = snapshot(handler.name)
            status.planReason = plans[handler.name]?.reason
            status.pendingPushAt = waitingPushes[handler.name]?.dueAt
            status.pendingPushes = waitingPushes[handler.name]?.pushes
            status.pushLimit = handler.pushLimit.description
            status.transfer = transfer(handler, stored)
            status.waitingFor = waitingFor[handler.name]
            return status
        }
        let rejected = rejectedReload.map {
            ConfigProblem(file: $0.file, line: $0.line, key: $0.key, handler: $0.handler,
                          message: "reload rejected, previous config still in force: \($0.message)")
        }
        let problems = rejected + config.diagnostics.map {
            ConfigProblem(file: $0.file, line: $0.line, key: $0.key, handler: $0.handler, message: $0.message)
        }
        var report = StatusReport(daemonVersion: Defaults.version, configFile: config.mainFile,
                                  startedAt: instance.startedAt, handlers: handlers, configProblems: problems)
        report.pushListener = instance.pushListenerAddress
        report.handlersDirectory = config.handlersDirectory
        return report
    }

    /// A one-line summary for `systemctl status`: `5 handlers, 1 failing; next: weather at 08:50`.
    func line() -> String {
        // Lazily: with thousands of handlers, a filtered copy of their configurations after each
        // wake was the largest allocation of the status line.
        let enabled = config.handlers.lazy.filter(\.enabled)
        let (count, failing) = (enabled.count, enabled.filter { (states[$0.name]?.consecutiveFailures ?? 0) > 0 }.count)
        var parts = ["\(count) handler\(count == 1 ? "" : "s")"]
        if config.handlers.isEmpty && config.diagnostics.isEmpty {
            parts[0] = "no handlers configured (add a handler file to \(config.handlersDirectory), then reload)"
        }
        if failing > 0 { parts[0] += ", \(failing) failing" }
        if !config.diagnostics.isEmpty { parts[0] += ", \(config.diagnostics.count) invalid" }
        let upcoming = enabled.compactMap { handler in scheduledEligible(handler).map { (handler.name, max($0, now)) } }
            .min { $0.1 < $1.1 }
        if let (name, date) = upcoming {
            parts.append("next: \(name) at \(SystemTimeZone.hourMinute(date))")
        }
        if let problem = rejectedReload.first {
            parts.append("reload rejected: \(problem.file):\(problem.line ?? 0)")
        }
        return parts.joined(separator: "; ")
    }

    /// The next time a handler becomes eligible or a deferred push is due, if any is in the
    /// future (no heartbeat cap): what the systemd timer should wake for.
    func nextPlannedFetch() -> Date? {
        let scheduled = config.handlers.lazy.compactMap(scheduledEligible).filter { $0 > now }.min()
        return [scheduled, nextPushDue.flatMap { $0 > now ? $0 : nil }].compactMap { $0 }.min()
    }
}
