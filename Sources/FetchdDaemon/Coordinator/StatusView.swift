import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdHandlers
import FetchdPlanner
import FetchdSnapshots
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
    /// The transfer handlers' downloads.
    let transfers: TransferLane
    /// The snapshot cache, for the paths of published content.
    let snapshots: SnapshotStore

    /// The daemon and every handler, as `fetchctl status` shows them; or the daemon and only
    /// `detailed`, with every reason it is not fetched now and its budget (`fetchctl status
    /// NAME`).
    func report(detailed: HandlerConfig? = nil) -> StatusReport {
        report(detailed.map { [details(of: $0)] } ?? config.handlers.map { status(of: $0, row: eligibility.row(of: $0)) })
    }

    /// `handler`'s line of the status, with the reasons it is not fetched now and its budget.
    private func details(of handler: HandlerConfig) -> HandlerStatus {
        let row = eligibility.row(of: handler)
        var status = status(of: handler, row: row)
        status.definedIn = handler.sourceFile + (handler.sourceLine.map { ":\($0)" } ?? "")
        status.holds = row.holds.map { HoldReport($0, of: handler) }
        status.budget = eligibility.input.budgets[handler.name].map { BudgetReport(used: $0.used, perDay: $0.perDay) }
        return status
    }

    /// `handler`'s line of the status.
    private func status(of handler: HandlerConfig, row: Eligibility.Row) -> HandlerStatus {
        let input = eligibility.input
        let stored = input.states[handler.name]
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
        status.snapshotPath = snapshots.publishedContentPath(of: handler.name)
        status.planReason = row.plan?.reason
        status.pendingPushAt = input.waitingPushes[handler.name]?.dueAt
        status.pendingPushes = input.waitingPushes[handler.name]?.pushes
        status.pushLimit = handler.pushLimit.description
        status.transfer = transfers.status(of: handler, state: stored)
        status.waitingFor = row.waitingFor
        return status
    }

    /// The daemon, its configuration's problems and `handlers`.
    private func report(_ handlers: [HandlerStatus]) -> StatusReport {
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
        if case .processGroups = ProgramCgroup.placement, config.startsPrograms {
            report.programIsolation = ProgramCgroup.placement.description
        }
        return report
    }

    /// A one-line summary for `systemctl status`: `5 handlers, 1 failing; next: weather at 08:50`.
    func line() -> String {
        // Lazily: with thousands of handlers, a filtered copy of their configurations after each
        // wake was the largest allocation of the status line.
        let enabled = config.handlers.lazy.filter(\.enabled)
        let states = eligibility.input.states
        // Failing as the failure alerts count it: `alert_after` failures in a row.
        let failing = enabled.filter { (states[$0.name]?.consecutiveFailures ?? 0) >= $0.alertAfter }.count
        let count = enabled.count
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
