import FetchdControl
import FetchdCore
import FetchdState
import Foundation

/// Answers control-socket requests from the coordinator's state.
struct DaemonControlHandler: ControlRequestHandler {
    let coordinator: FetchCoordinator
    /// Where wakes and fetches asked for go.
    let clock: WakeClock
    /// Where `reload` requests go (the reload service answers them in turn).
    let reloads: ReloadService.Requests

    /// How many of its latest attempts the status of one handler shows.
    static let recentAttempts = 5

    func handle(_ request: ControlRequest, from peer: PeerCredentials) async -> ControlResponse {
        switch request.command {
        case .ping:
            return ControlResponse(pong: PingReport(daemonVersion: Defaults.version, pid: getpid()))
        case .status:
            guard let name = request.handler else {
                return ControlResponse(status: await coordinator.status(markSeen: request.markSeen ?? true))
            }
            // One handler, with why it is not fetched now and its latest attempts.
            guard var report = await coordinator.status(of: name) else { return .unknownHandler(name) }
            report.handlers[0].recent = await history(of: name, limit: Self.recentAttempts)
            return ControlResponse(status: report)
        case .history:
            guard let name = request.handler else { return .failure(.badRequest, "history needs a handler name") }
            guard let entries = await history(of: name, limit: request.limit ?? Defaults.historyLimit) else {
                return .failure(.unknownHandler, "no handler named \"\(name)\" is loaded or recorded")
            }
            return ControlResponse(history: entries)
        case .fetch:
            return await fetch(request)
        case .wake:
            clock.wake(.request)
            return ControlResponse()
        case .reload:
            guard let report = await reloads.reload() else {
                return .failure(.shuttingDown, "fetchd is shutting down; the configuration was not read again")
            }
            var response = ControlResponse()
            response.reload = report
            return response
        case .used:
            guard let name = request.handler else { return .failure(.badRequest, "used needs a handler name") }
            guard case .recorded(let next) = await coordinator.recordUse(name, source: .explicit) else {
                return .unknownHandler(name)
            }
            clock.wake(.use)  // the plan changed: the next wake may be sooner
            var response = ControlResponse()
            response.used = UsedReport(handler: name, nextFetchAt: next?.date, reason: next?.reason)
            return response
        case .push:
            guard let name = request.handler else { return .failure(.badRequest, "push needs a handler name") }
            do {
                var response = ControlResponse()
                response.push = try await PushIntake(queue: coordinator, clock: clock)
                    .push(name, data: Array((request.data ?? "").utf8))
                return response
            } catch {
                switch error {
                case .unknownHandler: return .failure(.unknownHandler, error.description)
                case .badData: return .failure(.badRequest, error.description)
                case .stateUnavailable: return .failure(.internalError, error.description)
                case .shuttingDown: return .failure(.shuttingDown, error.description)
                }
            }
        case .usage:
            guard let name = request.handler else { return .failure(.badRequest, "usage needs a handler name") }
            guard let report = await coordinator.usageReport(of: name) else {
                return .unknownHandler(name)
            }
            var response = ControlResponse()
            response.usage = report
            return response
        }
    }

    private func fetch(_ request: ControlRequest) async -> ControlResponse {
        guard let name = request.handler else { return .failure(.badRequest, "fetch needs a handler name") }
        guard await coordinator.isLoaded(name) else {
            return .unknownHandler(name)
        }
        guard request.wait ?? false else {
            // Without --wait the answer comes before the fetch starts: "already running" is what
            // it was at the request.
            let running = await coordinator.isRunning(name)
            clock.submit(FetchJob(handler: name, trigger: .manual, onFinish: nil))
            return ControlResponse(fetch: FetchReport(handler: name, joinedRunning: running))
        }
        // Whether it joined a running fetch is known only when the queued fetch comes to start (a
        // timer fetch may have begun meanwhile): the coordinator says, with the record.
        let (record, joined): (CompletedFetch?, Bool) = await withCheckedContinuation { continuation in
            clock.submit(FetchJob(handler: name, trigger: .manual, onFinish: { continuation.resume(returning: ($0, $1)) }))
        }
        guard let record else { return .failure(.shuttingDown, "fetchd is shutting down; the fetch did not run") }
        return ControlResponse(fetch: FetchReport(
            handler: name, result: record.result.name, reason: record.result.reason,
            durationMilliseconds: record.durationMilliseconds,
            snapshotPath: coordinator.snapshots.publishedContentPath(of: name), joinedRunning: joined))
    }

    /// The newest `limit` results of `name`, newest first; nil when no such handler is loaded
    /// and none was ever recorded.
    private func history(of name: String, limit: Int) async -> [HistoryEntry]? {
        let records = (try? coordinator.state.history(of: name, limit: limit)) ?? []
        if records.isEmpty, await !coordinator.isLoaded(name) { return nil }
        return records.map {
            HistoryEntry(startedAt: $0.startedAt, durationMilliseconds: $0.durationMilliseconds, result: $0.result.name,
                         reason: $0.result.reason, trigger: $0.trigger.rawValue, bytes: $0.bytes, version: $0.version)
        }
    }
}
