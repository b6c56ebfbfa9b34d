import FetchdConfig
import FetchdCore
import FetchdHandlers
import FetchdSnapshots
import FetchdState
import FetchdSystemd
import Foundation
import Logging

/// Runs fetches: one at a time per handler, at most `max_concurrent` in all, each under its
/// deadline; turns every outcome into one recorded result and, for new data, a snapshot.
public actor FetchCoordinator {
    /// The configuration in force.
    public internal(set) var config: LoadedConfig
    /// Problems of the last reload, when it was rejected (the previous config stays in force).
    var rejectedReload: [ConfigDiagnostic] = []
    let snapshots: SnapshotStore
    let state: StateStore
    let logger: Logger
    let startedAt = Date()
    let limiter: ConcurrencyLimiter
    private let runner = FetchRunner()
    /// Handlers running now, with the callers waiting for their result.
    private var running: [String: [CheckedContinuation<FetchRecord, Never>]] = [:]

    /// Creates a coordinator over opened stores.
    public init(config: LoadedConfig, snapshots: SnapshotStore, state: StateStore, logger: Logger) {
        self.config = config
        self.snapshots = snapshots
        self.state = state
        self.logger = logger
        self.limiter = ConcurrencyLimiter(limit: config.daemon.maxConcurrent)
    }

    /// Whether `name` is running now.
    func isRunning(_ name: String) -> Bool { running[name] != nil }

    /// Runs every due handler of this wake together (bounded by `max_concurrent`) and returns
    /// when all have finished. Handlers still running from an earlier wake are skipped.
    /// Returns the records of the fetches it ran.
    @discardableResult
    public func runDue(trigger: FetchTrigger = .timer, now: Date = Date()) async -> [FetchRecord] {
        let states = (try? state.allStates()) ?? [:]
        let due = Scheduler.due(config.handlers, states: states, now: now).filter { running[$0.name] == nil }
        guard !due.isEmpty else { return [] }
        logger.debug("wake: \(due.count) handler(s) due: \(due.map(\.name).joined(separator: ", "))")
        return await withTaskGroup(of: FetchRecord?.self) { group in
            for handler in due {
                group.addTask { await self.fetch(handler.name, trigger: trigger) }
            }
            var records: [FetchRecord] = []
            for await record in group { if let record { records.append(record) } }
            return records
        }
    }

    /// When the scheduler should wake next.
    public func nextWake(now: Date = Date()) -> Date {
        let states = (try? state.allStates()) ?? [:]
        return Scheduler.nextWake(config.handlers.filter { running[$0.name] == nil }, states: states, now: now,
                                  heartbeatSeconds: config.daemon.heartbeatSeconds)
    }

    /// Runs `name` now, or joins its fetch if one is running; nil when no such handler is loaded.
    public func fetch(_ name: String, trigger: FetchTrigger) async -> FetchRecord? {
        guard let handler = config.handler(named: name) else { return nil }
        if running[name] != nil {
            return await withCheckedContinuation { running[name, default: []].append($0) }
        }
        running[name] = []
        let record = await execute(handler, trigger: trigger)
        let waiters = running.removeValue(forKey: name) ?? []
        waiters.forEach { $0.resume(returning: record) }
        return record
    }

    /// One fetch of `handler`, from slot to recorded result.
    private func execute(_ handler: HandlerConfig, trigger: FetchTrigger) async -> FetchRecord {
        guard await limiter.acquire() else {
            return recordResult(handler, trigger: trigger, startedAt: Date(),
                                result: .failed(reason: "stopped before it started: fetchd is shutting down"))
        }
        defer { limiter.release() }
        // Time spent waiting for a slot is not the handler's: its deadline starts now.
        let startedAt = Date()
        let outputPath: String
        do {
            outputPath = try snapshots.stagingPath(for: handler.name)
        } catch {
            return recordResult(handler, trigger: trigger, startedAt: startedAt,
                                result: .failed(reason: "cannot prepare the snapshot directory: \(error)"))
        }
        let deadline = Duration.milliseconds(Int64(handler.deadlineSeconds * 1000))
        let latestPath = snapshots.latestContentPath(of: handler.name)
        var validators: [String: String] = [:]
        // Validators describe the latest snapshot of this URL; after the URL changes they mean nothing.
        if snapshots.latest(of: handler.name)?.details["request_url"] == handler.url, let saved = try? state.state(of: handler.name) {
            validators[HTTPHandler.etagKey] = saved.etag
            validators[HTTPHandler.lastModifiedKey] = saved.lastModified
        }
        let context = FetchContext(
            handlerName: handler.name, trigger: trigger, outputPath: outputPath,
            previousSnapshotPath: FileManager.default.fileExists(atPath: latestPath) ? latestPath : nil,
            deadline: .now + deadline, wallDeadline: startedAt.addingTimeInterval(handler.deadlineSeconds),
            previousValidators: validators)
        let implementation = HandlerFactory.make(handler, killGraceSeconds: config.daemon.killGraceSeconds)
        let outcome = await runner.run(implementation, context: context)
        if outcome.ignoredCompletions > 0 {
            logger.warning("\(handler.name): ignored \(outcome.ignoredCompletions) extra or late completion(s)",
                           metadata: ["handler": "\(handler.name)"])
        }
        return settle(handler, outcome: outcome, outputPath: outputPath, trigger: trigger, startedAt: startedAt)
    }

    /// Turns a run's outcome into a result, committing the snapshot for new data.
    private func settle(_ handler: HandlerConfig, outcome: FetchRunner.Outcome, outputPath: String,
                        trigger: FetchTrigger, startedAt: Date) -> FetchRecord {
        let finishedAt = Date()
        guard let completion = outcome.completion else {
            snapshots.discard(stagedFile: outputPath)
            let result: FetchResult = outcome.interrupted
                ? .failed(reason: "stopped: fetchd is shutting down") : .expired
            return recordResult(handler, trigger: trigger, startedAt: startedAt, result: result)
        }
        let notBefore = Self.serverFloor(in: completion, finishedAt: finishedAt)
        switch completion {
        case .noData:
            snapshots.discard(stagedFile: outputPath)
            return recordResult(handler, trigger: trigger, startedAt: startedAt, result: .noData, notBefore: notBefore)
        case .failed(let reason, _):
            snapshots.discard(stagedFile: outputPath)
            return recordResult(handler, trigger: trigger, startedAt: startedAt, result: .failed(reason: reason),
                                notBefore: notBefore)
        case .newData(let contentType, let details):
            let validators = Self.validators(in: details)
            let size = (try? FileManager.default.attributesOfItem(atPath: outputPath)[.size] as? NSNumber)?.intValue
            guard let size else {
                return recordResult(handler, trigger: trigger, startedAt: startedAt,
                                    result: .failed(reason: "reported newData but wrote no snapshot"))
            }
            guard size <= handler.maxBytes else {
                snapshots.discard(stagedFile: outputPath)
                return recordResult(handler, trigger: trigger, startedAt: startedAt,
                                    result: .failed(reason: "too large: the snapshot is \(size) bytes, over max_bytes (\(handler.maxBytes))"))
            }
            let template = SnapshotMetadata(
                handler: handler.name, fetchedAt: finishedAt,
                durationMilliseconds: Int(finishedAt.timeIntervalSince(startedAt) * 1000),
                contentType: contentType, trigger: trigger.rawValue, details: details)
            do {
                switch try snapshots.commit(stagedFile: outputPath, handler: handler.name, template: template,
                                            retain: handler.retain) {
                case .written(let metadata):
                    return recordResult(handler, trigger: trigger, startedAt: startedAt, result: .newData,
                                        bytes: metadata.bytes, sha256: metadata.sha256, version: metadata.version,
                                        validators: validators, notBefore: notBefore)
                case .unchanged(let metadata):
                    return recordResult(handler, trigger: trigger, startedAt: startedAt, result: .noData,
                                        bytes: metadata.bytes, sha256: metadata.sha256, validators: validators,
                                        notBefore: notBefore)
                }
            } catch {
                snapshots.discard(stagedFile: outputPath)
                return recordResult(handler, trigger: trigger, startedAt: startedAt,
                                    result: .failed(reason: "cannot write the snapshot: \(error)"))
            }
        }
    }

    /// The earliest next fetch the server asked for, from the completion's details.
    static func serverFloor(in completion: HandlerCompletion, finishedAt: Date) -> Date? {
        let details: [String: String]
        switch completion {
        case .newData(_, let all), .noData(let all), .failed(_, let all): details = all
        }
        return details[ServerHints.delayKey].flatMap(Double.init).map { finishedAt.addingTimeInterval($0) }
    }

    /// The HTTP validators a completion reports (present only for content in hand; an empty
    /// value means the server sent none), or nil to keep the stored ones.
    static func validators(in details: [String: String]) -> (etag: String?, lastModified: String?)? {
        guard details[HTTPHandler.etagKey] != nil || details[HTTPHandler.lastModifiedKey] != nil else { return nil }
        let etag = details[HTTPHandler.etagKey].flatMap { $0.isEmpty ? nil : $0 }
        let lastModified = details[HTTPHandler.lastModifiedKey].flatMap { $0.isEmpty ? nil : $0 }
        return (etag, lastModified)
    }

    /// Records the result durably and logs it.
    private func recordResult(_ handler: HandlerConfig, trigger: FetchTrigger, startedAt: Date, result: FetchResult,
                              bytes: Int? = nil, sha256: String? = nil, version: String? = nil,
                              validators: (etag: String?, lastModified: String?)? = nil,
                              notBefore: Date? = nil) -> FetchRecord {
        var record = FetchRecord(handler: handler.name, startedAt: startedAt, finishedAt: Date(), result: result,
                                 trigger: trigger, bytes: bytes, sha256: sha256, version: version)
        do {
            record = try state.record(record, validators: validators, notBefore: notBefore)
        } catch {
            logger.error("\(handler.name): cannot record the result in \(state.path): \(error)")
        }
        var metadata: Logger.Metadata = [
            "handler": "\(handler.name)", "result": "\(result.name)", "trigger": "\(trigger.rawValue)",
            "duration_ms": "\(record.durationMilliseconds)", "bytes": "\(bytes ?? 0)",
            MessageID.metadataKey: "\(result == .expired ? MessageID.deadlineExpired : MessageID.fetchFinished)",
        ]
        if let reason = result.reason { metadata["reason"] = "\(reason)" }
        if version != nil { metadata["snapshot"] = "\(snapshots.latestContentPath(of: handler.name))" }
        let summary = "\(handler.name): \(result.summary) in \(record.durationMilliseconds) ms (\(trigger.rawValue))"
            + (version.map { ", snapshot \($0)" } ?? "")
        switch result {
        case .newData, .noData: logger.info("\(summary)", metadata: metadata)
        case .failed, .expired: logger.warning("\(summary)", metadata: metadata)
        }
        return record
    }
}
