import CurlKit
import FetchdConfig
import FetchdCore
import FetchdHandlers
import FetchdSnapshots
import FetchdState
import Foundation
import Logging

/// One fetch, from slot to durable result, in the pipeline's three steps: **run** the handler
/// in a slot under its deadline, **settle** its outcome into a result (and, for new data, a
/// prepared snapshot), **publish** both (`ResultCommitter`: snapshot swapped in, result
/// recorded, durably). Background transfers take the same steps outside any deadline
/// (`FetchPipeline+Transfer.swift`).
///
/// It holds no per-handler state and touches no actor: fetches run here concurrently, and the
/// coordinator (which decides what to run) is needed only before and after.
final class FetchPipeline: Sendable {
    /// Where snapshots are staged and published.
    let snapshots: SnapshotStore
    /// Where results, validators and uses are recorded.
    let state: StateStore
    /// Where results and problems are logged.
    let logger: Logger
    /// Slots for exec handlers (programs are costly: `max_concurrent`).
    let programSlots: ConcurrencyLimiter
    /// Slots for http fetches, also per host.
    let httpSlots: ConcurrencyLimiter
    /// The one libcurl multi handle every http fetch and transfer runs on.
    let httpClient: HTTPClient
    /// Runs handlers under their deadlines.
    let runner = FetchRunner()
    /// Makes results durable in batches.
    let committer: ResultCommitter
    /// Background transfers: their slots, the running ones, when a partial one resumes.
    let transfers: TransferLane
    /// Failure alerts: looked at after each result, their programs run apart from any wake.
    let alerts: FailureAlerts

    /// Creates the pipeline over opened stores, with slots sized by `daemon`.
    init(snapshots: SnapshotStore, state: StateStore, daemon: DaemonConfig, logger: Logger) {
        self.snapshots = snapshots
        self.state = state
        self.logger = logger
        self.programSlots = ConcurrencyLimiter(limit: daemon.maxConcurrent)
        self.httpSlots = ConcurrencyLimiter(limit: daemon.httpMaxTransfers, perKeyLimit: daemon.httpMaxHostConnections)
        self.httpClient = HTTPClient(limits: Self.httpLimits(daemon))
        self.committer = ResultCommitter(snapshots: snapshots, state: state, logger: logger)
        self.transfers = TransferLane(snapshots: snapshots, httpClient: httpClient, runner: runner, daemon: daemon, logger: logger)
        self.alerts = FailureAlerts(state: state, runner: runner, logger: logger)
    }

    /// libcurl's connection caps: room for every transfer the slots let through, so none waits
    /// inside libcurl. The slots are the one queue: a fetch waits there before its deadline
    /// starts, and per host; libcurl queues a transfer over its caps with its deadline running
    /// and moves one on only as another ends. Every transfer libcurl runs holds an http slot or
    /// a background transfer's, and needs one connection at most (idle ones are closed to make
    /// room); no cap per host, which a redirect to another host or a proxy would make bind.
    static func httpLimits(_ daemon: DaemonConfig) -> HTTPClient.Limits {
        HTTPClient.Limits(maxConnections: daemon.httpMaxTransfers + daemon.transferMaxActive, maxHostConnections: 0)
    }

    /// Resizes the slots and libcurl's caps to a reloaded configuration's (`old` was in force).
    func resize(from old: DaemonConfig, to new: DaemonConfig) {
        if new.maxConcurrent != old.maxConcurrent { programSlots.resize(to: new.maxConcurrent) }
        if new.transferMaxActive != old.transferMaxActive { transfers.slots.resize(to: new.transferMaxActive) }
        if new.httpMaxTransfers != old.httpMaxTransfers || new.httpMaxHostConnections != old.httpMaxHostConnections {
            httpSlots.resize(to: new.httpMaxTransfers, perKeyLimit: new.httpMaxHostConnections)
        }
        if Self.httpLimits(new) != Self.httpLimits(old) { httpClient.update(Self.httpLimits(new)) }
    }

    /// Which slots `handler` waits for, and under which key: http fetches by host and port.
    func slot(for handler: HandlerConfig) -> (ConcurrencyLimiter, String) {
        switch handler.options {
        case .transfer: (transfers.slots, "")
        case .exec: (programSlots, "")
        case .http(let request): (httpSlots, ConnectionKey.of(request.url))
        }
    }

    /// Runs, settles and publishes one fetch of `handler` (not a transfer). `state` is its
    /// stored state when the caller has it at hand (`.read(nil)`: never fetched).
    @concurrent
    func fetch(_ handler: HandlerConfig, trigger: FetchTrigger, state: Lookup<HandlerState>, pushData: String?,
               daemon: DaemonConfig) async -> CompletedFetch {
        let item = await run(handler, trigger: trigger, state: state, pushData: pushData, daemon: daemon)
        return await committer.commit(item)
    }

    /// Runs `handler` in a slot and settles the outcome into a result to publish. The slot is
    /// given back before the result is published, so the next fetches run while it is written.
    private func run(_ handler: HandlerConfig, trigger: FetchTrigger, state known: Lookup<HandlerState>,
                     pushData: String?, daemon: DaemonConfig) async -> ResultCommitter.Item {
        let (slots, key) = slot(for: handler)
        guard await slots.acquire(key: key) else {
            return Self.item(handler, trigger: trigger, startedAt: Date(), result: Self.stoppedBeforeStart)
        }
        // Time spent waiting for a slot is not the handler's: its deadline starts now.
        let startedAt = Date()
        let outputPath: String
        var userOutputPath: String?
        do throws(DurableFile.Failure) {
            // Through fetchd-runas, the program's folder is fetchd-runas's to make.
            if let user = handler.user, daemon.runasSocket == nil {
                userOutputPath = try snapshots.staging.userPath(for: handler.name, user: user)
            }
            // An http body is written by fetchd in its future version folder; a program's
            // output is moved into one (it might leave other files beside it).
            outputPath = handler.request != nil ? try snapshots.staging.versionPath(for: handler.name)
                : snapshots.staging.path(for: handler.name)
        } catch {
            slots.release(key: key)
            return Self.item(handler, trigger: trigger, startedAt: startedAt,
                             result: .failed(reason: Self.stagingProblem(error, user: handler.user)))
        }
        let current = snapshots.currentVersion(of: handler.name)
        let context = FetchContext(
            handlerName: handler.name, trigger: trigger, outputPath: outputPath,
            previousSnapshotPath: previousSnapshot(of: handler.name, current: current),
            deadline: .now + .milliseconds(Int64(handler.deadlineSeconds * 1000)),
            wallDeadline: startedAt.addingTimeInterval(handler.deadlineSeconds),
            previousValidators: validators(of: handler, current: .read(current), state: known), pushData: pushData,
            userOutputPath: userOutputPath)
        let outcome = await runner.run(HandlerFactory.make(handler, daemon: daemon, httpClient: httpClient), context: context)
        slots.release(key: key)
        if outcome.ignoredCompletions > 0 {
            logger.warning("\(handler.name): ignored \(outcome.ignoredCompletions) extra or late completion(s)",
                           metadata: ["handler": "\(handler.name)"])
        }
        return await settle(handler, outcome: outcome, outputPath: outputPath, trigger: trigger, startedAt: startedAt,
                            knownDigest: outcome.contentDigest.map { ($0.sha256, $0.bytes) },
                            currentVersion: .read(current))
    }

    /// The published snapshot a handler may read (`FETCHD_PREVIOUS`). It is looked for only
    /// behind a `latest` link (`current`): no failed stat on a first fetch.
    private func previousSnapshot(of name: String, current: String?) -> String? {
        let latestPath = snapshots.latestContentPath(of: name)
        return current != nil && access(latestPath, F_OK) == 0 ? latestPath : nil
    }

    /// The HTTP validators to send for `handler`: those stored with its latest snapshot, while
    /// that snapshot is of the same URL (after the URL changes they mean nothing).
    func validators(of handler: HandlerConfig, current: Lookup<String> = .unread,
                    state known: Lookup<HandlerState> = .unread) -> HTTPValidators? {
        guard let request = handler.request else { return nil }
        let latest = current.value(orRead: { snapshots.currentVersion(of: handler.name) }).flatMap {
            snapshots.known(of: handler.name, version: $0)
        }
        guard latest?.requestURL == request.url,
              let saved = known.value(orRead: { (try? state.state(of: handler.name)) ?? nil }) else { return nil }
        return HTTPValidators(etag: saved.etag, lastModified: saved.lastModified)
    }
}
