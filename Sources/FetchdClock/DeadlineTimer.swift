import CPosixShim
import Foundation
import HeapModule
import Synchronization

/// Wakes sleepers at their deadlines from one thread (while any sleep), for every fetch's deadline;
/// or runs an action at a deadline (`schedule`), which costs a fetch no task at all.
///
/// Why not `Task.sleep`: on Linux each sleep is a `dispatch_after`, a new dispatch timer source
/// that pokes libdispatch's manager thread (an eventfd write, then an `epoll_wait` to re-arm),
/// so a wake of 1,000 fetches cost 1,000 such round trips and their allocations for deadlines
/// that almost never fire. Here a sleep is a heap entry under a lock; the thread is signalled
/// only when a new deadline is earlier than the time it will wake anyway, which for fetches
/// started one after another with the same deadline length is never.
///
/// The thread waits on the continuous clock itself (`ContinuousAlarm`), so it wakes only at a
/// deadline or when an earlier one arrives, and a deadline that passed while the machine was
/// suspended fires at resume. The daemon's own waits use it too (`sleep(for:)`): `Task.sleep`
/// would start libdispatch's once-a-second pool monitor (see `FetchdMain`).
public final class DeadlineTimer: Sendable {
    /// The timer every `FetchRunner` and the daemon's waits use.
    public static let shared = DeadlineTimer()

    /// How much later the next live deadline must be than the one the thread is armed for,
    /// after a cancel, for the thread to be told to re-arm (see `dropCancelledHead`).
    static let rearmSlack = Duration.seconds(1)

    private struct Entry: Comparable {
        let deadline: ContinuousClock.Instant
        let id: UInt64
        static func < (lhs: Entry, rhs: Entry) -> Bool { (lhs.deadline, lhs.id) < (rhs.deadline, rhs.id) }
    }

    private struct State {
        var heap = Heap<Entry>()
        /// Sleepers not yet woken and actions not yet run; an id in `heap` but not here was
        /// cancelled (removed lazily).
        var waiting: [UInt64: Waiter] = [:]
        /// Cancelled before their continuation was registered.
        var cancelledEarly: Set<UInt64> = []
        var threadStarted = false
        /// When the thread will look again (nil: no thread, or one that is about to end).
        var wakeAt: ContinuousClock.Instant?

        /// Cancelled entries stay in the heap until their deadline; drops them when they are
        /// most of it, so a daemon whose fetches all finish early does not keep them.
        mutating func compactIfMostlyCancelled() {
            // None left: the entries go at once rather than at their deadlines (every http fetch
            // that ends in time cancels its own), and `dropCancelledHead` ends the thread.
            if waiting.isEmpty {
                heap = Heap()
                return
            }
            guard heap.count > 64 && waiting.count < heap.count / 4 else { return }
            let waiting = waiting
            heap = Heap(heap.unordered.filter { waiting[$0.id] != nil })
        }

        /// After a cancel: pops cancelled entries off the top, and says whether the thread is
        /// armed for a moment that no longer matters and should look again (to sleep until the
        /// next live deadline, or to end). Not for every cancel: fetches started together end
        /// together, and each would wake the thread for a few milliseconds' difference; only
        /// when the next deadline is `rearmSlack` later, e.g. once after the last fetch of a
        /// wake, so an idle daemon does not wake at its finished fetches' deadlines.
        mutating func dropCancelledHead() -> Bool {
            while let first = heap.min, waiting[first.id] == nil { _ = heap.removeMin() }
            guard let wakeAt else { return false }
            guard let next = heap.min else { return true }
            return next.deadline > wakeAt + DeadlineTimer.rearmSlack
        }
    }

    /// What happens at a deadline: a sleeper is resumed, or an action runs on the timer's thread.
    private enum Waiter {
        case sleeper(CheckedContinuation<Bool, Never>)
        case action(@Sendable () -> Void)
    }

    private let state = Mutex(State())
    private let nextID = Atomic<UInt64>(0)
    private let alarm = ContinuousAlarm()

    /// Creates a timer; its thread starts with the first sleep and ends when none is left.
    public init() {}

    /// Suspends for `duration` (true) or until the task is cancelled (false, at once).
    public func sleep(for duration: Duration) async -> Bool {
        await sleep(until: .now + duration)
    }

    /// Suspends until `deadline` (true) or until the task is cancelled (false, at once).
    public func sleep(until deadline: ContinuousClock.Instant) async -> Bool {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let reached = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                if !register(id: id, deadline: deadline, waiter: .sleeper(continuation)) {
                    continuation.resume(returning: true)
                }
            }
        } onCancel: {
            cancel(id: id)
        }
        // A cancel that raced with the wake-up left its id behind.
        state.withLock { _ = $0.cancelledEarly.remove(id) }
        return reached
    }

    /// Sleepers not yet woken (for tests).
    var pendingCount: Int { state.withLock { $0.waiting.count } }
    /// Deadlines in the queue, cancelled ones not yet dropped included (for tests).
    var queuedCount: Int { state.withLock { $0.heap.count } }
    /// Whether the thread is running (for tests).
    var threadRunning: Bool { state.withLock { $0.threadStarted } }

    /// Runs `action` once on the timer's thread when `deadline` has passed (at once, on this
    /// thread, when it already has), unless `cancelScheduled` comes first. Returns the id to
    /// cancel it with.
    ///
    /// For a fetch whose handler stops itself when told (`FetchHandler.stopsAtExpiration`): its
    /// deadline is then a heap entry and nothing more, where a sleep needs a task of its own.
    /// The action must be short and must not block: every deadline shares the thread.
    public func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let id = nextID.add(1, ordering: .relaxed).newValue
        if !register(id: id, deadline: deadline, waiter: .action(action)) { action() }
        return id
    }

    /// Cancels a `schedule`d action. Returns false when it has already run or is running (an
    /// action that the timer thread has taken may still be running when this returns).
    @discardableResult
    public func cancelScheduled(_ id: UInt64) -> Bool {
        let (cancelled, rearm) = state.withLock { state in
            guard state.waiting.removeValue(forKey: id) != nil else { return (false, false) }
            state.compactIfMostlyCancelled()
            return (true, state.dropCancelledHead())
        }
        if rearm { alarm.wake() }
        return cancelled
    }

    /// Queues `waiter` for `deadline`. Returns false, queueing nothing, when the deadline has
    /// already passed; a sleeper cancelled before it got here is resumed with false at once.
    private func register(id: UInt64, deadline: ContinuousClock.Instant, waiter: Waiter) -> Bool {
        enum Outcome { case cancelled, due, wait(signal: Bool, startThread: Bool) }
        let outcome: Outcome = state.withLock { state in
            if state.cancelledEarly.remove(id) != nil { return .cancelled }
            if deadline <= .now { return .due }
            state.waiting[id] = waiter
            state.heap.insert(Entry(deadline: deadline, id: id))
            let startThread = !state.threadStarted
            state.threadStarted = true
            let earlier = state.wakeAt.map { deadline < $0 } ?? true
            if earlier { state.wakeAt = deadline }
            return .wait(signal: earlier && !startThread, startThread: startThread)
        }
        switch outcome {
        case .cancelled:
            if case .sleeper(let continuation) = waiter { continuation.resume(returning: false) }
            return true
        case .due:
            return false
        case .wait(let signalThread, let startThread):
            if startThread {
                let thread = Thread { [self] in
                    // Named from inside (see HTTPClient's driver thread for why).
                    _ = fetchd_name_this_thread("fetchd-deadline")
                    run()
                }
                thread.start()
            } else if signalThread {
                alarm.wake()
            }
            return true
        }
    }

    private func cancel(id: UInt64) {
        let (waiter, rearm): (Waiter?, Bool) = state.withLock { state in
            guard let waiter = state.waiting.removeValue(forKey: id) else {
                state.cancelledEarly.insert(id)  // not registered yet; `sleep` removes it in the end
                return (nil, false)
            }
            state.compactIfMostlyCancelled()
            return (waiter, state.dropCancelledHead())
        }
        if rearm { alarm.wake() }
        if case .sleeper(let continuation) = waiter { continuation.resume(returning: false) }
    }

    /// The thread: resumes every sleeper whose deadline passed, then waits for the next one.
    private func run() {
        while true {
            let now = ContinuousClock.now
            var due: [Waiter] = []
            let next: ContinuousClock.Instant? = state.withLock { state in
                while let first = state.heap.min, first.deadline <= now {
                    _ = state.heap.removeMin()
                    if let waiter = state.waiting.removeValue(forKey: first.id) { due.append(waiter) }
                }
                guard let next = state.heap.min else {
                    // Nothing left to wait for: the thread ends (the next sleep starts another),
                    // so an idle daemon between wakes keeps no thread for this.
                    state.wakeAt = nil
                    state.threadStarted = false
                    return nil
                }
                state.wakeAt = next.deadline
                return next.deadline
            }
            for waiter in due {
                switch waiter {
                case .sleeper(let continuation): continuation.resume(returning: true)
                case .action(let action): action()
                }
            }
            guard let next else { return }
            alarm.wait(until: next)
        }
    }
}
