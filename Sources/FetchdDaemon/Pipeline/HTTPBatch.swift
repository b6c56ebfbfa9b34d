import CurlKit
import FetchdConfig
import FetchdCore
import FetchdHandlers
import FetchdSnapshots
import FetchdState
import Foundation
import Synchronization

/// The http fetches of one wake, run as one batch: no task, no continuation and no executor
/// hop per fetch.
///
/// Who holds a fetch at each moment:
/// 1. the batch feeds its fetches, a window at a time, to the http slots (`ConcurrencyLimiter`,
///    per host, shared with every other http fetch), as callbacks;
/// 2. the thread that grants a slot (libcurl's driver thread, as a transfer ends, or the wake's
///    task at first) prepares the fetch (its staging folder, validators, request) and posts it
///    to libcurl's driver (`HTTPClient.start`); its deadline starts with its slot, and the
///    driver ends the transfer there (`HTTPRequest.deadline`);
/// 3. the driver thread ends the transfer: it frees the slot (which starts the next fetch
///    waiting for one) and hands the outcome to the commit queue;
/// 4. the commit queue (`ResultCommitter`) settles it (size, digest, meta.json), publishes and
///    records it with its batch, then hands the stored record back here;
/// 5. the one task running the batch (`run`) takes the records as they are stored, a commit
///    batch at a time, hands them to `finish` (the coordinator: journal, waiters, alerts), and
///    frees their places in the window (the next fetches are fed to the slots).
///
/// Nothing is answered or logged before it is durable: records leave only from step 4.
/// Shutdown (the running task cancelled) withdraws the fetches waiting for a slot and ends the
/// running transfers; every fetch is still recorded, so its history shows why it did not end.
/// A fetch asked for (`fetchctl fetch`, a push) of a handler the batch has not started takes it
/// over (`takeOver`) and runs at once; one the batch has started is joined.
final class HTTPBatch: Sendable {
    /// One fetch of the batch.
    struct Fetch: Sendable {
        /// Its handler's place in `handlers`.
        let place: Int
        /// Its http slots' key (host and port), worked out once.
        let key: String
    }

    /// The configuration the wake chose from; fetches name their handler by place in it.
    let handlers: [HandlerConfig]
    /// The handlers' stored states, as the wake read them.
    let states: [String: HandlerState]
    /// The batch's fetches, in the order they are fed to the slots.
    let fetches: [Fetch]
    private let trigger: FetchTrigger
    /// The slots, the client, the snapshots and the commit queue the fetches go through.
    let pipeline: FetchPipeline
    /// Fetches between fed and handed to `finish` at once (waiting for a slot, transferring,
    /// waiting for the commit queue or for `run`): what bounds the batch's memory whatever its
    /// size, as the window of tasks does for the rest of the wake. Larger than the slots, so
    /// that the slots stay full while the commit queue writes.
    let window: Int

    /// Where each fetch is, under one lock: the threads that grant slots, end transfers and
    /// record results all change it.
    struct Progress {
        /// `fetches[next...]` are not fed yet.
        var next = 0
        /// Fed, and not yet handed to `finish`.
        var open = 0
        /// Neither recorded nor taken over.
        var unrecorded: Int
        /// Set by `stop`: nothing more starts.
        var stopping = false
        /// Fetches waiting for a slot: the limiter's waiter id of each, by index.
        var waiting: [Int: Int] = [:]
        /// Running transfers: the client's id of each, by index.
        var transfers: [Int: Int] = [:]
        /// Indices granted a slot on another thread before `feed` noted their waiter id.
        var grantedEarly: Set<Int> = []
        /// Indices whose transfer ended before `start` noted its id (a refused request ends at once).
        var endedEarly: Set<Int> = []
        /// Indices not yet fed that a fetch asked for took over (`takeOver`): `feed` skips them.
        var takenOver: Set<Int> = []
        /// Slots to give back, by key (`releaseSlot`).
        var releases: [String] = []
        /// Whether a thread is giving slots back: the others leave theirs to it.
        var releasing = false
        /// Stored records not yet taken by `run`.
        var recorded: [(Int, CompletedFetch)] = []
        /// `run`, waiting for records.
        var reader: CheckedContinuation<Void, Never>?

        /// Takes `run`'s continuation when there is something for it: records, or nothing left.
        mutating func readerToWake() -> CheckedContinuation<Void, Never>? {
            guard !recorded.isEmpty || unrecorded == 0 else { return nil }
            defer { reader = nil }
            return reader
        }
    }
    /// See `Progress`.
    let progress: Mutex<Progress>

    /// A batch of `fetches`, started by `run`.
    init(handlers: [HandlerConfig], states: [String: HandlerState], fetches: [Fetch], trigger: FetchTrigger,
         pipeline: FetchPipeline, window: Int) {
        self.handlers = handlers
        self.states = states
        self.fetches = fetches
        self.trigger = trigger
        self.pipeline = pipeline
        self.window = max(1, window)
        progress = Mutex(Progress(unrecorded: fetches.count))
    }

    /// Why this batch's wake fetches `handler` (`WakeQueue.cause`).
    func trigger(of handler: HandlerConfig) -> FetchTrigger { WakeQueue.cause(of: handler, in: trigger) }

    /// Runs every fetch and hands their stored records to `finish` as they come (in batches,
    /// on this task), folding them into `result`. Returns once all are recorded or taken over.
    func run<Records: WakeRecords>(into result: Records,
                                   finish: @Sendable ([(HandlerConfig, CompletedFetch)]) async -> Void) async -> Records {
        var result = result
        await withTaskCancellationHandler {
            feed()
            while let records = await nextRecorded() {
                records.forEach { result.add($0.1) }
                await finish(records.map { (handlers[fetches[$0.0].place], $0.1) })
                // Their places are free only now: a coordinator slow to take records holds
                // back the next fetches instead of letting records pile up here.
                progress.withLock { $0.open -= records.count }
                feed()
            }
        } onCancel: {
            stop()
        }
        return result
    }

    /// The records stored since the last call (waiting for one); nil once all are taken.
    private func nextRecorded() async -> [(Int, CompletedFetch)]? {
        while true {
            let taken: [(Int, CompletedFetch)]? = progress.withLock { progress in
                defer { progress.recorded = [] }
                return progress.recorded.isEmpty && progress.unrecorded == 0 ? nil : progress.recorded
            }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
            await withCheckedContinuation { (reader: CheckedContinuation<Void, Never>) in
                let now = progress.withLock { progress in
                    guard progress.recorded.isEmpty && progress.unrecorded > 0 else { return true }
                    progress.reader = reader
                    return false
                }
                if now { reader.resume() }
            }
        }
    }

    /// A stored record, handed to `run`.
    func recorded(_ index: Int, _ record: CompletedFetch) {
        let reader = progress.withLock { progress in
            progress.recorded.append((index, record))
            progress.unrecorded -= 1
            return progress.readerToWake()
        }
        reader?.resume()
    }
}
