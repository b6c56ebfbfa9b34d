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
        var record: CompletedFetch
        /// Set when the transfer paused for unmet conditions.
        var pausedBecause: String?
    }

    /// One run of a transfer handler (`download`, its options): waits for a transfer slot (`transfer_max_active`), downloads
    /// or resumes outside any deadline, settles and publishes the finished file like any
    /// snapshot, then runs `on_complete`. A pause or shutdown records nothing: the partial file
    /// waits to resume.
    @concurrent
    func transfer(_ handler: HandlerConfig, _ download: TransferOptions, trigger: FetchTrigger,
                  daemon: DaemonConfig) async -> TransferRun {
        let name = handler.name
        guard await transfers.slots.acquire() else {
            return TransferRun(record: CompletedFetch(
                handler: name, trigger: trigger, startedAt: Date(), finishedAt: Date(),
                result: Self.stoppedBeforeStart))
        }
        let startedAt = Date()
        let pause = transfers.board.begin(name)
        let outcome: BackgroundTransfer.Outcome
        let files: BackgroundTransfer.Files
        do {
            files = BackgroundTransfer.Files(directory: try snapshots.staging.makeTransferDirectory(for: name))
            let transfer = transfers.transfer(for: handler, download, daemon: daemon, validators: validators(of: handler))
            outcome = await TransferLane.download(transfer, files: files, pause: pause, board: transfers.board, name: name)
        } catch {
            files = BackgroundTransfer.Files(directory: "")
            outcome = .failed(reason: "cannot prepare the transfer folder: \(error)", answer: nil, keptBytes: 0)
        }
        transfers.board.end(name)
        let item: ResultCommitter.Item
        switch outcome {
        case .interrupted(let kept):
            transfers.slots.release()
            let why = pause.reason ?? "fetchd is stopping"
            logger.info("\(name): transfer paused at \(kept) bytes: \(why); it resumes from there",
                        metadata: ["handler": "\(name)", "result": "paused", "bytes": "\(kept)",
                                   MessageID.metadataKey: "\(MessageID.transferFinished)"])
            return TransferRun(record: CompletedFetch(handler: name, trigger: trigger, startedAt: startedAt, finishedAt: Date(),
                                                      result: .failed(reason: "paused at \(kept) bytes: \(why)")),
                               pausedBecause: pause.reason)
        case .notModified(let details):
            item = await settle(handler, outcome: .init(completion: .noData(details: details)), outputPath: files.partial,
                                trigger: trigger, startedAt: startedAt)
        case .failed(let reason, let answer, _):
            item = await settle(handler, outcome: .init(completion: .failed(reason: reason), serverAnswer: answer),
                                outputPath: "", trigger: trigger, startedAt: startedAt)
        case .complete(let done):
            item = await settle(
                handler, outcome: .init(completion: .newData(contentType: done.contentType, details: done.details),
                                        serverAnswer: done.answer),
                outputPath: files.partial, trigger: trigger, startedAt: startedAt, knownDigest: (done.sha256, done.bytes))
        }
        let record = await committer.commit(item)
        // The partial file became the snapshot (or was dropped): its resume record goes with it.
        if !FileManager.default.fileExists(atPath: files.partial) { unlink(files.record) }
        // The slot covers publishing too (a large file's syncfs), not on_complete.
        transfers.slots.release()
        let published = record.version.map { snapshots.layout.contentPath(of: name, version: $0) }
        log(record, snapshot: published, messageID: MessageID.transferFinished)
        if let published, let command = download.onComplete {
            await transfers.runOnComplete(command, handler: handler, path: published, trigger: trigger, daemon: daemon)
        }
        return TransferRun(record: record)
    }
}
