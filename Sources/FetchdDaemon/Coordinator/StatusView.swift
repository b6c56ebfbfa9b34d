import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdPlanner
import FetchdState
import Foundation

/// One look at what the coordinator knows, taken on the actor in one step
/// (`FetchCoordinator.statusView(now:)`), from which the reports are made off it: what
/// `fetchctl status` shows and systemd's one-line `STATUS=`.
struct StatusView {
    /// The configuration in force.
    let config: LoadedConfig
    /// The scheduling rules applied at the look's instant: the states, plans, pushes and what
    /// holds each handler back, as the wake sees them.
    let eligibility: Eligibility
    /// Problems of the last reload, when it was rejected.
    let rejectedReload: [ConfigDiagnostic]
    /// This daemon process.
    let instance: DaemonInstance

    /// The daemon and every handler, as `fetchctl status` shows them. `transfer` gives a
    /// transfer handler's download, `snapshot` the path of a handler's published content.
    func report(transfer: (HandlerConfig, HandlerState?) -> TransferStatus?,
                snapshot: (String) -> String?) -> StatusReport {
        let input = eligibility.input
        let handlers = config.handlers.map { handler in
            let stored = input.states[handler.name]
            let row = eligibility.row(of: handler)
            var status = HandlerStatus(name: handler.name, kind: handler.kind.rawValue, enabled: handler.enabled)
            status.running = input.running.contains(handler.name)
            if let stored {
                status.lastResult = stored.lastResult
                status.lastReason = stored.lastReason
                status.lastAttemptAt = stored.lastAttemptAt
                status.lastSuccessAt = stored.lastSuccessAt
                status.newDataSinceLastLook = stored.newDataUnseen
                status.consecutiveFailures = stored.consecutiveFailures
            }
            status.nextEligibleAt = row.nextEligibleAt
            status.snapshotPath = snapshot(handler.name)
            status.planReason = row.plan?.reason
            status.pendingPushAt = input.waitingPushes[handler.name]?.dueAt
            status.pendingPushes = input.waitingPushes[handler.name]?.pushes
            status.pushLimit = handler.pushLimit.description
            status.transfer = transfer(handler, stored)
            status.waitingFor = row.waitingFor
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
        let states = eligibility.input.states
        let (count, failing) = (enabled.count, enabled.filter { (states[$0.name]?.consecutiveFailures ?? 0) > 0 }.count)
        var parts = ["\(count) handler\(count == 1 ? "" : "s")"]
        if config.handlers.isEmpty && config.diagnostics.isEmpty {
            parts[0] = "no handlers configured (add a handler file to \(config.handlersDirectory), then reload)"
        }
        if failing > 0 { parts[0] += ", \(failing) failing" }
        if !config.diagnostics.isEmpty { parts[0] += ", \(config.diagnostics.count) invalid" }
        if let (name, date) = eligibility.soonest() {
            parts.append("next: \(name) at \(SystemTimeZone.hourMinute(date))")
        }
        if let problem = rejectedReload.first {
            parts.append("reload rejected: \(problem.file):\(problem.line ?? 0)")
        }
        return parts.joined(separator: "; ")
    }
}
