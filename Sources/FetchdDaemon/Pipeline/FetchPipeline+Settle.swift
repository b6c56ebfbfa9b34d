import FetchdConfig
import FetchdCore
import FetchdHandlers
import FetchdSnapshots
import FetchdState
import Foundation

extension FetchPipeline {
    /// Turns a run's outcome into a result to publish, preparing the snapshot for new data. The
    /// one place a fetch's result is decided: the handler's completion, or `expired`, or
    /// `failed` for a snapshot missing, too large or that cannot be written; content identical
    /// to the latest snapshot is `noData`. Publishing only completes it (its version), or
    /// fails it when the snapshot cannot be published (`CompletedFetch.notPublished`).
    ///
    /// On the global executor (`@concurrent`): hashing a large snapshot must not hold up the
    /// caller's executor.
    @concurrent
    func settle(_ handler: HandlerConfig, outcome: FetchRunner.Outcome, outputPath: String,
                trigger: FetchTrigger, startedAt: Date, knownDigest: (sha256: String, bytes: Int)? = nil,
                currentVersion: Lookup<String> = .unread) async -> ResultCommitter.Item {
        settleNow(handler, outcome: outcome, outputPath: outputPath, trigger: trigger, startedAt: startedAt,
                  knownDigest: knownDigest, currentVersion: currentVersion)
    }

    /// `settle`, on the calling thread: a wake's batch settles on the commit queue.
    func settleNow(_ handler: HandlerConfig, outcome: FetchRunner.Outcome, outputPath: String,
                   trigger: FetchTrigger, startedAt: Date, finishedAt: Date = Date(),
                   knownDigest: (sha256: String, bytes: Int)? = nil,
                   currentVersion: Lookup<String> = .unread) -> ResultCommitter.Item {
        func item(_ result: FetchResult, notBefore: Date? = nil) -> ResultCommitter.Item {
            Self.item(handler, trigger: trigger, startedAt: startedAt, finishedAt: finishedAt, result: result,
                      notBefore: notBefore)
        }
        guard let completion = outcome.completion else {
            snapshots.staging.discard(stagedFile: outputPath)
            return item(outcome.interrupted ? .failed(reason: "stopped: fetchd is shutting down") : .expired)
        }
        let answer = outcome.serverAnswer
        let notBefore = answer?.delaySeconds.map { finishedAt.addingTimeInterval($0) }
        switch completion {
        case .noData:
            snapshots.staging.discard(stagedFile: outputPath)
            return item(.noData, notBefore: notBefore)
        case .failed(let reason, _):
            snapshots.staging.discard(stagedFile: outputPath)
            return item(.failed(reason: reason), notBefore: notBefore)
        case .newData(let contentType, var details):
            var info = stat()
            guard lstat(outputPath, &info) == 0 else {
                snapshots.staging.discard(stagedFile: outputPath)  // its staging folder
                return item(.failed(reason: "reported newData but wrote no snapshot"))
            }
            guard Int(info.st_size) <= handler.maxBytes else {
                snapshots.staging.discard(stagedFile: outputPath)
                return item(.failed(reason: "too large: the snapshot is \(info.st_size) bytes, over max_bytes (\(handler.maxBytes))"))
            }
            if let answer { details.merge(answer.metadataDetails) { _, server in server } }
            let template = SnapshotMetadata(
                handler: handler.name, fetchedAt: finishedAt,
                durationMilliseconds: Int(finishedAt.timeIntervalSince(startedAt) * 1000),
                contentType: contentType, trigger: trigger.rawValue, details: details)
            let prepared: PreparedVersion
            do {
                prepared = try snapshots.prepare(stagedFile: outputPath, handler: handler.name, template: template,
                                                 retain: handler.retain, knownDigest: knownDigest, staged: info,
                                                 currentVersion: currentVersion)
            } catch {
                snapshots.staging.discard(stagedFile: outputPath)
                return item(.failed(reason: "cannot write the snapshot: \(error)"))
            }
            var result = item(.newData, notBefore: notBefore)
            result.fetch.validators = answer?.validators
            switch prepared {
            case .unchanged(let metadata):
                result.fetch.result = .noData
                (result.fetch.bytes, result.fetch.sha256) = (metadata.bytes, metadata.sha256)
            case .pending(let pending):
                (result.fetch.bytes, result.fetch.sha256) = (pending.metadata.bytes, pending.metadata.sha256)
                result.snapshot = pending
            }
            return result
        }
    }

    /// Why the folders a fetch writes into could not be made, as its failure reason. A handler
    /// with `user` needs fetchd to hand a folder to that user: say so when it may not.
    static func stagingProblem(_ error: DurableFile.Failure, user: UserAccount?) -> String {
        if let user, error.code == EPERM {
            return "cannot run as user \(user.name): fetchd (uid \(geteuid())) may not give it a folder to write in (\(error)); "
                + "`user` needs fetchd to run as root"
        }
        return "cannot prepare the snapshot directory: \(error)"
    }

    /// The result of a fetch that never got its slot: the daemon stopped first.
    static let stoppedBeforeStart = FetchResult.failed(reason: "stopped before it started: fetchd is shutting down")

    /// A result without a snapshot.
    static func item(_ handler: HandlerConfig, trigger: FetchTrigger, startedAt: Date, finishedAt: Date = Date(),
                     result: FetchResult, notBefore: Date? = nil) -> ResultCommitter.Item {
        var fetch = CompletedFetch(handler: handler.name, trigger: trigger, startedAt: startedAt, finishedAt: finishedAt,
                                   result: result)
        fetch.notBefore = notBefore
        return ResultCommitter.Item(fetch: fetch, snapshot: nil)
    }
}
