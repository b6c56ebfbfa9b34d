import CurlKit
import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdHandlers
import FetchdSnapshots
import FetchdState
import Foundation
import Logging

/// Background transfers' own lane beside the fetches: their slots (`transfer_max_active`), the
/// board of those running (progress, pause switches), when a partial one may resume, and the
/// pieces of a run: the download itself, and `on_complete` once the file is published. The run's
/// settling and publishing are the pipeline's, as for any fetch (`FetchPipeline.transfer`).
final class TransferLane: Sendable {
    /// Slots for background transfers (`transfer_max_active`).
    let slots: ConcurrencyLimiter
    /// The transfers running now: progress and pause switches.
    let board = TransferBoard()
    private let snapshots: SnapshotStore
    private let httpClient: HTTPClient
    private let runner: FetchRunner
    private let logger: Logger

    /// A lane over the cache, sized by `daemon`, downloading on `httpClient`.
    init(snapshots: SnapshotStore, httpClient: HTTPClient, runner: FetchRunner, daemon: DaemonConfig, logger: Logger) {
        self.slots = ConcurrencyLimiter(limit: daemon.transferMaxActive)
        self.snapshots = snapshots
        self.httpClient = httpClient
        self.runner = runner
        self.logger = logger
    }

    /// Where `name`'s transfer keeps its partial download (the folder may not exist yet).
    func files(of name: String) -> BackgroundTransfer.Files {
        BackgroundTransfer.Files(directory: snapshots.staging.transferDirectory(of: name))
    }

    /// Runs `transfer`, stopping it when `pause` flips; on the global executor, so a long
    /// download holds up nothing else.
    @concurrent
    static func download(_ transfer: BackgroundTransfer, files: BackgroundTransfer.Files, pause: PauseSwitch,
                         board: TransferBoard, name: String) async -> BackgroundTransfer.Outcome {
        await withTaskGroup(of: BackgroundTransfer.Outcome?.self) { group in
            group.addTask { await transfer.run(files: files) { board.attach(name, progress: $0) } }
            group.addTask {
                await pause.wait()
                return nil
            }
            var outcome = BackgroundTransfer.Outcome.interrupted(keptBytes: 0)
            while let next = await group.next() {
                if let next { outcome = next }
                group.cancelAll()  // either ended: stop the other
            }
            return outcome
        }
    }

    /// The transfer `handler` describes (`download`, its options), with its share of the global rate limit, asking for
    /// the stored resource only if it is still the one `validators` name.
    func transfer(for handler: HandlerConfig, _ download: TransferOptions, daemon: DaemonConfig,
                  validators: HTTPValidators?) -> BackgroundTransfer {
        let request = download.request
        var transfer = BackgroundTransfer(url: request.url, maxBytes: handler.maxBytes, client: httpClient)
        if let userAgent = request.userAgent { transfer.userAgent = userAgent }
        transfer.headers = request.headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        transfer.proxy = request.proxy
        transfer.caFile = request.caFile
        transfer.globalAddressesOnly = request.globalAddressesOnly
        transfer.expectedSHA256 = download.sha256
        transfer.stallSeconds = download.stallSeconds
        // The global limit is shared equally by the transfers running when this one starts.
        let global = daemon.transferMaxBytesPerSecond
        let share = global > 0 ? max(1, global / max(1, board.count)) : 0
        transfer.maxBytesPerSecond = [download.maxBytesPerSecond, share].filter { $0 > 0 }.min() ?? 0
        transfer.currentValidators = validators
        return transfer
    }

    /// Runs a transfer's `on_complete` with the published file's path appended (and in
    /// `FETCHD_SNAPSHOT`), under `Defaults.onCompleteTimeoutSeconds`; logs how it went.
    func runOnComplete(_ command: [String], handler: HandlerConfig, path: String, trigger: FetchTrigger,
                       daemon: DaemonConfig) async {
        let program = HandlerFactory.makeProgram(handler, command: command, snapshot: path, daemon: daemon)
        let seconds = Defaults.onCompleteTimeoutSeconds
        let context = FetchContext(handlerName: handler.name, trigger: trigger, outputPath: "/dev/null",
                                   previousSnapshotPath: path, deadline: .now + .seconds(seconds),
                                   wallDeadline: Date().addingTimeInterval(seconds))
        let outcome = await runner.run(program, context: context)
        let metadata: Logger.Metadata = ["handler": "\(handler.name)", "snapshot": "\(path)"]
        switch outcome.completion {
        case .newData?, .noData?:
            logger.info("\(handler.name): on_complete finished", metadata: metadata)
        case .failed(let reason, _)?:
            logger.warning("\(handler.name): on_complete failed: \(reason)", metadata: metadata)
        case nil:
            logger.warning("\(handler.name): on_complete \(outcome.interrupted ? "stopped: fetchd is stopping" : "ran past \(Int(seconds)) s and was stopped")",
                           metadata: metadata)
        }
    }

    /// When `handler`'s partial transfer may resume; nil without one. At once after a pause or
    /// a restart, after a failure with an exponential delay (`retryDelaySeconds`), never
    /// before the server's Retry-After.
    func resumeDate(of handler: HandlerConfig, state: HandlerState?, now: Date) -> Date? {
        guard FileManager.default.fileExists(atPath: files(of: handler.name).record) else { return nil }
        let lastAttempt = Scheduler.lastAttempt(state, now: now) ?? .distantPast
        let date = lastAttempt.addingTimeInterval(Self.retryDelaySeconds(failures: state?.consecutiveFailures ?? 0))
        return max(date, Scheduler.serverFloor(of: handler, state: state, now: now) ?? .distantPast)
    }

    /// The wait before resuming a transfer after `failures` failures in a row: 30 s doubling
    /// to an hour.
    static func retryDelaySeconds(failures: Int) -> Double {
        failures == 0 ? 0 : min(3600, 30 * pow(2, Double(min(failures, 20) - 1)))
    }

    /// A transfer handler's download in progress or waiting to resume, for `fetchctl status`.
    func status(of handler: HandlerConfig, state: HandlerState?) -> TransferStatus? {
        guard handler.transfer != nil else { return nil }
        if let live = board.status(of: handler.name) { return live }
        let files = files(of: handler.name)
        guard let record = TransferResumeRecord.read(from: files.record) else { return nil }
        var status = TransferStatus(state: .partial, bytes: BackgroundTransfer.size(of: files.partial),
                                    totalBytes: record.totalBytes)
        status.resumesAt = resumeDate(of: handler, state: state, now: Date())
        return status
    }

    /// When each of `handlers` with a partial download may resume (`resumeDate`). Their
    /// `min_interval` does not hold them back: it spaces whole downloads, not the pieces of one.
    func resumeDates(of handlers: some Sequence<HandlerConfig>, states: [String: HandlerState], now: Date) -> [String: Date] {
        var dates: [String: Date] = [:]
        for handler in handlers where handler.transfer != nil && handler.enabled {
            dates[handler.name] = resumeDate(of: handler, state: states[handler.name], now: now)
        }
        return dates
    }

    /// Pauses the running transfers for which `unmet` gives a reason (their network became
    /// metered or went away, AC power was lost); they resume at the first wake after their
    /// conditions hold again.
    func pause(unmet: (String) -> String?) {
        for name in board.names {
            guard let reason = unmet(name) else { continue }
            if board.pause(name, reason: reason) {
                logger.info("\(name): pausing the transfer: \(reason)", metadata: ["handler": "\(name)"])
            }
        }
    }
}
