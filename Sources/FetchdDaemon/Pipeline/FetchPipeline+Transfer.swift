import CurlKit
import FetchdConfig
import FetchdCore
import FetchdHandlers
import FetchdSnapshots
import FetchdState
import FetchdSystemd
import Foundation
import Logging

extension FetchPipeline {
    /// What a transfer's run came to: its durable record, or, for a transfer paused because its
    /// conditions stopped holding, why (nothing is recorded then: the partial file waits).
    struct TransferRun: Sendable {
        /// The record (a pause's is not stored).
        var record: FetchRecord
        /// Set when the transfer paused for unmet conditions.
        var pausedBecause: String?
    }

    /// One run of a transfer handler: waits for a transfer slot (`transfer_max_active`), downloads
    /// or resumes outside any deadline, settles and publishes the finished file like any
    /// snapshot, then runs `on_complete`. A pause or shutdown records nothing: the partial file
    /// waits to resume.
    @concurrent
    func transfer(_ handler: HandlerConfig, trigger: FetchTrigger, daemon: DaemonConfig) async -> TransferRun {
        let name = handler.name
        guard await transferSlots.acquire() else {
            return TransferRun(record: FetchRecord(
                handler: name, startedAt: Date(), finishedAt: Date(),
                result: .failed(reason: "stopped before it started: fetchd is shutting down"), trigger: trigger))
        }
        let startedAt = Date()
        let pause = transferBoard.begin(name)
        let outcome: BackgroundTransfer.Outcome
        let files: BackgroundTransfer.Files
        do {
            files = BackgroundTransfer.Files(directory: try snapshots.makeTransferDirectory(for: name))
            outcome = await Self.download(transfer(for: handler, daemon: daemon), files: files, pause: pause,
                                          board: transferBoard, name: name)
        } catch {
            files = BackgroundTransfer.Files(directory: "")
            outcome = .failed(reason: "cannot prepare the transfer folder: \(error)", details: [:], keptBytes: 0)
        }
        transferBoard.end(name)
        let item: ResultCommitter.Item
        switch outcome {
        case .interrupted(let kept):
            transferSlots.release()
            let why = pause.reason ?? "fetchd is stopping"
            logger.info("\(name): transfer paused at \(kept) bytes: \(why); it resumes from there",
                        metadata: ["handler": "\(name)", "result": "paused", "bytes": "\(kept)",
                                   MessageID.metadataKey: "\(MessageID.transferFinished)"])
            return TransferRun(record: FetchRecord(handler: name, startedAt: startedAt, finishedAt: Date(),
                                                   result: .failed(reason: "paused at \(kept) bytes: \(why)"), trigger: trigger),
                               pausedBecause: pause.reason)
        case .notModified(let details):
            item = await settle(handler, outcome: .init(completion: .noData(details: details)), outputPath: files.partial,
                                trigger: trigger, startedAt: startedAt)
        case .failed(let reason, let details, _):
            item = await settle(handler, outcome: .init(completion: .failed(reason: reason, details: details)),
                                outputPath: "", trigger: trigger, startedAt: startedAt)
        case .complete(let done):
            item = await settle(
                handler, outcome: .init(completion: .newData(contentType: done.contentType, details: done.details)),
                outputPath: files.partial, trigger: trigger, startedAt: startedAt, knownDigest: (done.sha256, done.bytes))
        }
        let record = await committer.commit(item)
        // The partial file became the snapshot (or was dropped): its resume record goes with it.
        if !FileManager.default.fileExists(atPath: files.partial) { unlink(files.record) }
        // The slot covers publishing too (a large file's syncfs), not on_complete.
        transferSlots.release()
        let published = record.version.map { "\(snapshots.directory(of: name))/versions/\($0)/content" }
        log(record, snapshot: published, messageID: MessageID.transferFinished)
        if let published, let command = handler.onComplete {
            await runOnComplete(command, handler: handler, path: published, trigger: trigger, daemon: daemon)
        }
        return TransferRun(record: record)
    }

    /// Runs `transfer`, stopping it when `pause` flips; on the global executor, so a long
    /// download holds up nothing else.
    @concurrent
    private static func download(_ transfer: BackgroundTransfer, files: BackgroundTransfer.Files, pause: PauseSwitch,
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

    /// The transfer `handler` describes, with its share of the global rate limit.
    private func transfer(for handler: HandlerConfig, daemon: DaemonConfig) -> BackgroundTransfer {
        var transfer = BackgroundTransfer(url: handler.url ?? "", maxBytes: handler.maxBytes, client: httpClient)
        if let userAgent = handler.userAgent { transfer.userAgent = userAgent }
        transfer.headers = handler.headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        transfer.proxy = handler.proxy
        transfer.caFile = handler.caFile
        transfer.expectedSHA256 = handler.sha256
        transfer.stallSeconds = handler.stallSeconds
        // The global limit is shared equally by the transfers running when this one starts.
        let global = daemon.transferMaxBytesPerSecond
        let share = global > 0 ? max(1, global / max(1, transferBoard.count)) : 0
        transfer.maxBytesPerSecond = [handler.maxBytesPerSecond, share].filter { $0 > 0 }.min() ?? 0
        transfer.currentValidators = validators(of: handler)
        return transfer
    }

    /// Where `name`'s transfer keeps its partial download (the folder may not exist yet).
    func transferFiles(of name: String) -> BackgroundTransfer.Files {
        BackgroundTransfer.Files(directory: snapshots.transferDirectory(of: name))
    }

    /// Runs a transfer's `on_complete` with the published file's path appended (and in
    /// `FETCHD_SNAPSHOT`), under `Defaults.onCompleteTimeoutSeconds`; logs how it went.
    private func runOnComplete(_ command: [String], handler: HandlerConfig, path: String, trigger: FetchTrigger,
                               daemon: DaemonConfig) async {
        var program = HandlerFactory.makeExec(handler, command: command + [path], daemon: daemon)
        program.environment["FETCHD_SNAPSHOT"] = path
        program.writesSnapshot = false
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
}
