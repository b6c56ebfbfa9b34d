import CPosixShim
import FetchdCore
import FetchdSnapshots
import FetchdState
import Foundation
import Logging
import Synchronization

/// Makes fetch results durable in batches: group commit.
///
/// A finished fetch hands over its result (and its prepared snapshot, if any) and waits. A
/// single worker takes everything waiting, publishes the snapshots with two `syncfs` calls and
/// records all results in one SQLite transaction, then resumes every waiter. While a batch is
/// being written the next one gathers, so a lone fetch pays what it paid before and a wake of
/// a thousand fetches pays a few flushes instead of six per fetch. While results keep coming, a
/// small batch waits a moment for more (`lingerBelow`). Nothing is acknowledged
/// (logged, answered on the control socket, counted by `fetchd --once`) before it is durable.
///
/// The worker is a serial dispatch queue because the work is blocking I/O, which must stay off
/// Swift's cooperative threads.
final class ResultCommitter: Sendable {
    /// One result to make durable.
    struct Item: Sendable {
        /// The result, with the state changes it brings (validators, the server's floor).
        var fetch: CompletedFetch
        /// New content to publish before the result is recorded.
        var snapshot: PendingVersion?
    }

    /// A result waiting for the next batch: made, or to be made on the commit queue (`settle`:
    /// a batch fetch's outcome, settled there so that no task runs per fetch), and where its
    /// stored record goes.
    private struct Entry {
        enum Source {
            case made(Item)
            case settle(@Sendable () -> Item)
        }
        var source: Source
        var reply: @Sendable (CompletedFetch) -> Void

        /// The result, settled here when it was not yet.
        var item: Item {
            switch source {
            case .made(let item): item
            case .settle(let settle): settle()
            }
        }
    }

    private struct Waiting {
        var items: [Entry] = []
        var draining = false
        /// When the last batch was written.
        var lastWritten: ContinuousClock.Instant?
        /// Batches written, and those of them that waited for more (for tests).
        var batches = 0
        var lingered = 0
    }

    /// A batch smaller than this, taken while results keep coming (the previous batch was
    /// written less than `burstGap` ago), waits `lingerMicroseconds` for more before it is
    /// written. Each batch costs two `syncfs` and a database transaction whatever its size, and
    /// once fetches assembled their own versions the queue kept up so well that a wake's
    /// batches shrank to a handful of results (a thousand fetches on tmpfs: about 100 batches,
    /// 45 with this). A result that comes alone, with nothing written for `burstGap`, is
    /// written at once: only results of a burst wait, at most this long. It is
    /// `FETCHD_COMMIT_BATCH`, which the benchmark's floor (`bench/snapshot_floor.c`) reads too:
    /// the floor commits its rows in transactions of this size.
    static let lingerBelow = Int(FETCHD_COMMIT_BATCH)
    /// See `lingerBelow`.
    static let burstGap: Duration = .milliseconds(2)
    /// See `lingerBelow`.
    static let lingerMicroseconds: UInt32 = 500

    private let snapshots: SnapshotStore
    private let state: StateStore
    private let logger: Logger
    private let waiting = Mutex(Waiting())
    /// Results the database refused (a full disk, an I/O error): logged already, and written
    /// before the next batch, so that history has them once the disk has room again. Bounded: a
    /// database that never comes back must not grow the daemon without end.
    private let unrecorded = Mutex<[CompletedFetch]>([])
    static let unrecordedLimit = 10_000
    /// Default QoS, not `.utility`: libdispatch renices a utility thread, and lowering its nice
    /// again when the thread takes default work needs RLIMIT_NICE (the unit's LimitNICE=).
    private let worker = DispatchQueue(label: "fetchd-commit")

    init(snapshots: SnapshotStore, state: StateStore, logger: Logger) {
        self.snapshots = snapshots
        self.state = state
        self.logger = logger
    }

    /// Makes `item` durable (with whatever else is waiting) and returns it as stored. A snapshot
    /// that cannot be written turns the result into `failed` (`CompletedFetch.notPublished`).
    func commit(_ item: Item) async -> CompletedFetch {
        await withCheckedContinuation { continuation in
            enqueue(Entry(source: .made(item), reply: { continuation.resume(returning: $0) }))
        }
    }

    /// Settles a result on the commit queue with `settle`, makes it durable with the rest of
    /// its batch, and hands the stored record to `reply` there (which must not block). For a
    /// wake's batch of http fetches, whose transfers end on the driver thread: settling there
    /// would hold up every other transfer, and a task per fetch to do it costs more than the
    /// settling itself.
    func commit(settling settle: @escaping @Sendable () -> Item, reply: @escaping @Sendable (CompletedFetch) -> Void) {
        enqueue(Entry(source: .settle(settle), reply: reply))
    }

    private func enqueue(_ entry: Entry) {
        let start = waiting.withLock { waiting in
            waiting.items.append(entry)
            defer { waiting.draining = true }
            return !waiting.draining
        }
        if start { worker.async { self.drain() } }
    }

    /// Writes batches until nothing waits.
    private func drain() {
        while true {
            let (taken, lastWritten) = waiting.withLock { waiting in
                defer { waiting.items = [] }
                if waiting.items.isEmpty { waiting.draining = false }
                return (waiting.items, waiting.lastWritten)
            }
            guard !taken.isEmpty else { return }
            var batch = taken
            let linger = Self.lingers(count: batch.count, sinceLastWrite: lastWritten.map { .now - $0 })
            if linger {
                usleep(Self.lingerMicroseconds)  // the commit queue's own thread, not Swift's pool
                batch += waiting.withLock { waiting in
                    defer { waiting.items = [] }
                    return waiting.items
                }
            }
            let records = write(batch.map(\.item))
            waiting.withLock { waiting in
                waiting.lastWritten = .now
                waiting.batches += 1
                if linger { waiting.lingered += 1 }
            }
            for (index, entry) in batch.enumerated() { entry.reply(records[index]) }
        }
    }

    /// Whether a batch of `count` results, taken `sinceLastWrite` after the previous batch was
    /// written (nil: none was), waits for more: only a small batch in a burst does.
    static func lingers(count: Int, sinceLastWrite: Duration?) -> Bool {
        guard let sinceLastWrite else { return false }
        return sinceLastWrite < burstGap && count < lingerBelow
    }

    /// Batches written so far, and how many of them waited for more (for tests).
    var batchCounts: (written: Int, lingered: Int) { waiting.withLock { ($0.batches, $0.lingered) } }

    /// Publishes the batch's snapshots, then records every result in one transaction.
    private func write(_ items: [Item]) -> [CompletedFetch] {
        var results = items.map(\.fetch)
        let withSnapshot = items.indices.filter { items[$0].snapshot != nil }
        let batch = snapshots.commit(withSnapshot.compactMap { items[$0].snapshot })
        if let unflushed = batch.unflushed {
            logger.warning("snapshots published, but flushing them failed: \(unflushed); they may not survive a power loss")
        }
        for (index, outcome) in zip(withSnapshot, batch.results) {
            switch outcome {
            case .success(let metadata):
                results[index].version = metadata.version
            case .failure(let error):
                results[index] = results[index].notPublished("\(error)")
            }
        }
        do {
            return try recordAfterEarlier(results)
        } catch {
            // Kept only for a disk that may get room again: a record the database refuses for
            // what it is would fail every later batch too.
            guard StateStore.isTransient(error) else {
                let earlier = unrecorded.withLock { $0.count }
                logger.error("cannot record \(earlier + results.count) result(s) in \(state.path): \(error)")
                unrecorded.withLock { $0.removeAll() }
                return results
            }
            logger.error("""
                cannot record \(results.count) result(s) in \(state.path): \(error); \
                they are kept and written with the next results (check the disk)
                """)
            unrecorded.withLock { kept in
                kept.append(contentsOf: results)
                if kept.count > Self.unrecordedLimit { kept.removeFirst(kept.count - Self.unrecordedLimit) }
            }
            return results
        }
    }

    /// Records `records` after the results the database refused earlier, in one transaction,
    /// and forgets those once they are in. Returns the stored `records`.
    private func recordAfterEarlier(_ records: [CompletedFetch]) throws -> [CompletedFetch] {
        let earlier = unrecorded.withLock { $0 }
        let stored = try recordRetrying(earlier + records)
        if !earlier.isEmpty {
            unrecorded.withLock { $0.removeFirst(min($0.count, earlier.count)) }
            logger.notice("recorded \(earlier.count) earlier result(s) the database had refused")
        }
        return Array(stored.suffix(records.count))
    }

    /// Pauses before each new attempt at a transaction that failed for a transient reason, in
    /// microseconds: an I/O error or a full disk of a moment must not cost results their
    /// record, and a disk that stays full costs the batch a quarter of a second.
    static let retryPausesMicroseconds: [UInt32] = [20_000, 200_000]

    /// `state.record`, tried again after each of `retryPausesMicroseconds` while it fails for a
    /// transient reason (SQLite rolled the failed transaction back: a new attempt starts clean).
    private func recordRetrying(_ records: [CompletedFetch]) throws -> [CompletedFetch] {
        var pauses = Self.retryPausesMicroseconds[...]
        while true {
            do {
                return try state.record(records)
            } catch where StateStore.isTransient(error) && !pauses.isEmpty {
                logger.warning("recording \(records.count) result(s) failed (\(error)); trying again")
                usleep(pauses.removeFirst())  // the commit queue's own thread, not Swift's pool
            }
        }
    }

    /// Writes the results the database refused earlier, once more (at the end of `fetchd
    /// --once` and at shutdown, when no later batch would), on the commit queue. Returns how
    /// many are still unrecorded; they are logged as lost.
    func flushUnrecorded() async -> Int {
        await withCheckedContinuation { continuation in
            worker.async { continuation.resume(returning: self.writeUnrecorded()) }
        }
    }

    private func writeUnrecorded() -> Int {
        let earlier = unrecorded.withLock { $0 }
        guard !earlier.isEmpty else { return 0 }
        do {
            _ = try recordAfterEarlier([])
            return 0
        } catch {
            let names = earlier.map(\.handler).joined(separator: ", ")
            logger.error("""
                \(earlier.count) result(s) were logged but could not be recorded in \(state.path) and are lost: \
                \(names) (\(error)); check the disk (space, I/O errors in the kernel log)
                """)
            return earlier.count
        }
    }
}
