import CurlKit
import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdHandlers
import FetchdSnapshots
import FetchdState
import FetchdSystemd
import Foundation
import Logging

extension FetchCoordinator {
    /// One run of a transfer handler: waits for a transfer slot (`transfer_max_active`), downloads
    /// or resumes outside any deadline, publishes the finished file like any snapshot, then runs
    /// `on_complete`. A pause or shutdown records nothing: the partial file waits to resume.
    func executeTransfer(_ handler: HandlerConfig, trigger: FetchTrigger) async -> FetchRecord {
        let name = handler.name
        guard await transferLimiter.acquire() else {
            return FetchRecord(handler: name, startedAt: Date(), finishedAt: Date(),
                               result: .failed(reason: "stopped before it started: fetchd is shutting down"), trigger: trigger)
        }
        let startedAt = Date()
        let pause = transferBoard.begin(name)
        let outcome: BackgroundTransfer.Outcome
        let files: BackgroundTransfer.Files
        do {
            files = BackgroundTransfer.Files(directory: try snapshots.makeTransferDirectory(for: name))
            outcome = await Self.download(transfer(for: handler), files: files, pause: pause, board: transferBoard, name: name)
        } catch {
            files = BackgroundTransfer.Files(directory: "")
            outcome = .failed(reason: "cannot prepare the transfer folder: \(error)", details: [:], keptBytes: 0)
        }
        transferBoard.end(name)
        let item: ResultCommitter.Item
        switch outcome {
        case .interrupted(let kept):
            transferLimiter.release()
            let why = pause.reason ?? "fetchd is stopping"
            if let reason = pause.reason { deferredReasons[name] = reason }
            logger.info("\(name): transfer paused at \(kept) bytes: \(why); it resumes from there",
                        metadata: ["handler": "\(name)", "result": "paused", "bytes": "\(kept)",
                                   MessageID.metadataKey: "\(MessageID.transferFinished)"])
            return FetchRecord(handler: name, startedAt: startedAt, finishedAt: Date(),
                               result: .failed(reason: "paused at \(kept) bytes: \(why)"), trigger: trigger)
        case .notModified(let details):
            item = await Self.settle(handler, outcome: .init(completion: .noData(details: details)), outputPath: files.partial,
                                     trigger: trigger, startedAt: startedAt, snapshots: snapshots)
        case .failed(let reason, let details, _):
            item = await Self.settle(handler, outcome: .init(completion: .failed(reason: reason, details: details)),
                                     outputPath: "", trigger: trigger, startedAt: startedAt, snapshots: snapshots)
        case .complete(let done):
            item = await Self.settle(
                handler, outcome: .init(completion: .newData(contentType: done.contentType, details: done.details)),
                outputPath: files.partial, trigger: trigger, startedAt: startedAt, snapshots: snapshots,
                knownDigest: (done.sha256, done.bytes))
        }
        let record = await committer.commit(item)
        // The partial file became the snapshot (or was dropped): its resume record goes with it.
        if !FileManager.default.fileExists(atPath: files.partial) { unlink(files.record) }
        // The slot covers publishing too (a large file's syncfs), not on_complete.
        transferLimiter.release()
        plans[name] = nil
        let published = record.version.map { "\(snapshots.directory(of: name))/versions/\($0)/content" }
        log(record, snapshot: published, messageID: MessageID.transferFinished)
        if let published, let command = handler.onComplete {
            await runOnComplete(command, handler: handler, path: published, trigger: trigger)
        }
        return record
    }

    /// Runs `transfer`, stopping it when `pause` flips; off the actor, so a long download holds
    /// up nothing else.
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
    private func transfer(for handler: HandlerConfig) -> BackgroundTransfer {
        var transfer = BackgroundTransfer(url: handler.url ?? "", maxBytes: handler.maxBytes, client: httpClient)
        if let userAgent = handler.userAgent { transfer.userAgent = userAgent }
        transfer.headers = handler.headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        transfer.proxy = handler.proxy
        transfer.caFile = handler.caFile
        transfer.expectedSHA256 = handler.sha256
        transfer.stallSeconds = handler.stallSeconds
        // The global limit is shared equally by the transfers running when this one starts.
        let global = config.daemon.transferMaxBytesPerSecond
        let share = global > 0 ? max(1, global / max(1, transferBoard.count)) : 0
        transfer.maxBytesPerSecond = [handler.maxBytesPerSecond, share].filter { $0 > 0 }.min() ?? 0
        if snapshots.latest(of: handler.name)?.details["request_url"] == handler.url,
           let saved = (try? state.state(of: handler.name)) ?? nil {
            transfer.currentValidators[HTTPHandler.etagKey] = saved.etag
            transfer.currentValidators[HTTPHandler.lastModifiedKey] = saved.lastModified
        }
        return transfer
    }

    /// Runs a transfer's `on_complete` with the published file's path appended (and in
    /// `FETCHD_SNAPSHOT`), under `Defaults.onCompleteTimeoutSeconds`; logs how it went.
    private func runOnComplete(_ command: [String], handler: HandlerConfig, path: String, trigger: FetchTrigger) async {
        var program = HandlerFactory.makeExec(handler, command: command + [path], daemon: config.daemon)
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
