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
///    to libcurl's driver (`HTTPClient.start`); its deadline starts with its slot and is
///    libcurl's time limit for the transfer;
/// 3. the driver thread ends the transfer: it frees the slot (which starts the next fetch
///    waiting for one) and hands the outcome to the commit queue;
/// 4. the commit queue (`ResultCommitter`) settles it (size, digest, meta.json), publishes and
///    records it with its batch, then hands the stored record back here, which frees its place
///    in the window (the next fetch is fed to the slots);
/// 5. the one task running the batch (`run`) takes the records as they are stored, a commit
///    batch at a time, and hands them to `finish` (the coordinator: journal, waiters, alerts).
///
/// Nothing is answered or logged before it is durable: records leave only from step 4.
/// Shutdown (the running task cancelled) withdraws the fetches waiting for a slot and ends the
/// running transfers; every fetch is still recorded, as today's task per fetch did.
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
    let fetches: [Fetch]
    private let trigger: FetchTrigger
    let pipeline: FetchPipeline
    /// Fetches between fed and recorded at once (waiting for a slot, transferring, or waiting
    /// for the commit queue): what bounds the batch's memory whatever its size, as the window
    /// of tasks does for the rest of the wake. Larger than the slots, so that the slots stay
    /// full while the commit queue writes.
    private let window: Int

    struct Progress {
        /// `fetches[next...]` are not fed yet.
        var next = 0
        /// Fed, and not yet recorded.
        var open = 0
        /// Not yet handed to `run`.
        var unrecorded: Int
        var stopping = false
        /// Fetches waiting for a slot: the limiter's waiter id of each, by index.
        var waiting: [Int: Int] = [:]
        /// Running transfers: the client's id of each, by index.
        var transfers: [Int: Int] = [:]
        /// Indices granted a slot before their waiter id was noted, and whose transfer ended
        /// before its id was noted (a refused request ends at once).
        var grantedEarly: Set<Int> = []
        var endedEarly: Set<Int> = []
        /// Stored records not yet taken by `run`, and `run` waiting for some.
        var recorded: [(Int, CompletedFetch)] = []
        var reader: CheckedContinuation<Void, Never>?
    }
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

    /// Runs every fetch and hands their stored records to `finish` as they come (in batches,
    /// on this task), folding them into `result`. Returns once all are recorded.
    func run<Records: WakeRecords>(into result: Records,
                                   finish: @Sendable ([(HandlerConfig, CompletedFetch)]) async -> Void) async -> Records {
        var result = result
        await withTaskCancellationHandler {
            feed()
            while let records = await nextRecorded() {
                records.forEach { result.add($0.1) }
                await finish(records.map { (handlers[fetches[$0.0].place], $0.1) })
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
                    guard progress.recorded.isEmpty else { return true }
                    progress.reader = reader
                    return false
                }
                if now { reader.resume() }
            }
        }
    }

    /// Hands fetches to the slots while the window has room (all of them once stopping: those
    /// are recorded as never started).
    private func feed() {
        while true {
            let fed: (index: Int, stopping: Bool)? = progress.withLock { progress in
                guard progress.next < fetches.count, progress.open < window || progress.stopping else { return nil }
                defer { progress.next += 1 }
                progress.open += 1
                return (progress.next, progress.stopping)
            }
            guard let fed else { return }
            if fed.stopping {
                notStarted(fed.index)
                continue
            }
            guard let waiter = pipeline.httpSlots.acquire(key: fetches[fed.index].key, granted: { self.start(fed.index) })
            else { continue }
            let withdraw = progress.withLock { progress in
                guard progress.grantedEarly.remove(fed.index) == nil else { return false }  // granted already
                progress.waiting[fed.index] = waiter
                return progress.stopping
            }
            if withdraw, pipeline.httpSlots.withdraw(waiter) { notStarted(fed.index) }
        }
    }

    /// Stops the batch: fetches waiting for a slot or not fed are recorded as never started,
    /// running transfers end (`cancelled`, recorded as stopped by the shutdown).
    private func stop() {
        let (waiting, transfers) = progress.withLock { progress in
            progress.stopping = true
            defer { progress.waiting = [:] }
            return (progress.waiting, Array(progress.transfers.values))
        }
        for (index, waiter) in waiting where pipeline.httpSlots.withdraw(waiter) { notStarted(index) }
        transfers.forEach { pipeline.httpClient.cancel(id: $0) }
        feed()
    }

    /// A fetch that never got its slot: recorded as stopped before it started.
    func notStarted(_ index: Int) {
        let handler = handlers[fetches[index].place]
        let item = FetchPipeline.item(handler, trigger: trigger(of: handler), startedAt: Date(),
                                      result: .failed(reason: "stopped before it started: fetchd is shutting down"))
        ended(index, settle: { item })
    }

    /// A scheduled fetch of a handler planned from its usage ran for a predicted use.
    func trigger(of handler: HandlerConfig) -> FetchTrigger {
        trigger == .timer && handler.learnsUsage ? .usage : trigger
    }

    /// The transfer of `index` has ended (or never began): its outcome goes to the commit queue.
    func ended(_ index: Int, settle: @escaping @Sendable () -> ResultCommitter.Item) {
        pipeline.committer.commit(settling: settle) { record in self.recorded(index, record) }
    }

    /// A stored record, handed to `run`; its window place is free.
    private func recorded(_ index: Int, _ record: CompletedFetch) {
        let reader = progress.withLock { progress in
            progress.recorded.append((index, record))
            progress.unrecorded -= 1
            progress.open -= 1
            defer { progress.reader = nil }
            return progress.reader
        }
        reader?.resume()
        feed()
    }
}
