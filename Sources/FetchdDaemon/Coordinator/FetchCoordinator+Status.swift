import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdState
import Foundation

extension FetchCoordinator {
    /// The status of the daemon and every handler; `markSeen` resets the new-data counters.
    public func status(markSeen: Bool) -> StatusReport {
        let now = Date()
        let states = schedulingStates(now: now)
        refreshPower()
        if markSeen { try? state.markSeen() }
        let globalFloor = globalBudgetFloor(now: now)
        // Pushes this daemon is fetching at once are not waiting for anything.
        let pushes = self.pushes.waiting()
        let handlers = config.handlers.map { handler in
            let handlerState = states[handler.name]
            var plan = plannedFetch(handler)
            if var held = plan, let floor = globalFloor, floor > held.date {
                held.date = floor
                held.reason += "; global_budget spent until then"
                plan = held
            }
            // An overdue handler is eligible now, not hours ago (after a suspend, or a forward step
            // of the clock, until its catch-up fetch is recorded); nor at the daemon's start, which
            // a clock stepped back puts hours ahead.
            var status = HandlerStatus(
                name: handler.name, kind: handler.kind.rawValue, enabled: handler.enabled,
                running: isRunning(handler.name), lastResult: handlerState?.lastResult,
                lastReason: handlerState?.lastReason, lastAttemptAt: handlerState?.lastAttemptAt,
                lastSuccessAt: handlerState?.lastSuccessAt,
                nextEligibleAt: [Scheduler.nextEligible(handler, state: handlerState, now: now, planned: plan?.date)
                    .map { max($0, now) }, pushes[handler.name]?.dueAt].compactMap { $0 }.min(),
                newDataSinceLastLook: handlerState?.newDataUnseen ?? 0,
                consecutiveFailures: handlerState?.consecutiveFailures ?? 0,
                snapshotPath: publishedSnapshot(of: handler.name))
            status.planReason = plan?.reason
            status.pendingPushAt = pushes[handler.name]?.dueAt
            status.pendingPushes = pushes[handler.name]?.pushes
            status.pushLimit = handler.pushLimit.description
            status.transfer = pipeline.transferStatus(of: handler, state: handlerState)
            // Only for scheduled handlers: one run on request alone waits for nothing.
            if handler.enabled, handler.minInterval != .never {
                status.waitingFor = unmetConditions(handler)
            }
            return status
        }
        let rejected = rejectedReload.map {
            ConfigProblem(file: $0.file, line: $0.line, key: $0.key, handler: $0.handler,
                          message: "reload rejected, previous config still in force: \($0.message)")
        }
        let problems = rejected + config.diagnostics.map {
            ConfigProblem(file: $0.file, line: $0.line, key: $0.key, handler: $0.handler, message: $0.message)
        }
        var report = StatusReport(daemonVersion: Defaults.version, configFile: config.mainFile, startedAt: instance.startedAt,
                                  handlers: handlers, configProblems: problems)
        report.pushListener = instance.pushListenerAddress
        report.handlersDirectory = config.handlersDirectory
        return report
    }

    /// The path of `name`'s latest published content, nil while it has none.
    nonisolated func publishedSnapshot(of name: String) -> String? {
        let path = snapshots.latestContentPath(of: name)
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// The newest `limit` results of `name`, newest first; nil when no such handler is loaded
    /// and none was ever recorded.
    public func history(of name: String, limit: Int) -> [HistoryEntry]? {
        let records = (try? state.history(of: name, limit: limit)) ?? []
        if records.isEmpty && config.handler(named: name) == nil { return nil }
        return records.map {
            HistoryEntry(startedAt: $0.startedAt, durationMilliseconds: $0.durationMilliseconds, result: $0.result,
                         reason: $0.reason, trigger: $0.trigger, bytes: $0.bytes, version: $0.version)
        }
    }
}
