import Foundation
import HeapModule
import Synchronization

/// Wakes sleepers at their deadlines from one thread (while any sleep), for every fetch's deadline.
///
/// Why not `Task.sleep`: on Linux each sleep is a `dispatch_after`, a new dispatch timer source
/// that pokes libdispatch's manager thread (an eventfd write, then an `epoll_wait` to re-arm),
/// so a wake of 1,000 fetches cost 1,000 such round trips and their allocations for deadlines
/// that almost never fire. Here a sleep is a heap entry under a lock; the thread is signalled
/// only when a new deadline is earlier than the time it will wake anyway, which for fetches
/// started one after another with the same deadline length is never.
///
/// The thread waits on `CLOCK_MONOTONIC` (a condition variable cannot wait on the continuous
/// clock) for at most `maximumWaitSeconds` at a time and compares with `ContinuousClock`, so a
/// deadline that passed while the machine was suspended fires at most that long after resume.
public final class DeadlineTimer: Sendable {
    /// The timer every `FetchRunner` uses.
    public static let shared = DeadlineTimer()

    /// The longest the thread waits before looking at the continuous clock again.
    static let maximumWaitSeconds = 1.0

    private struct Entry: Comparable {
        let deadline: ContinuousClock.Instant
        let id: UInt64
        static func < (lhs: Entry, rhs: Entry) -> Bool { (lhs.deadline, lhs.id) < (rhs.deadline, rhs.id) }
    }

    private struct State {
        var heap = Heap<Entry>()
        /// Sleepers not yet woken; an id in `heap` but not here was cancelled (removed lazily).
        var waiting: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        /// Cancelled before their continuation was registered.
        var cancelledEarly: Set<UInt64> = []
        var threadStarted = false
        /// When the thread will look again (nil: it waits for a signal).
        var wakeAt: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let nextID = Atomic<UInt64>(0)
    private let signal = ConditionSignal()

    /// Creates a timer; its thread starts with the first sleep and ends when none is left.
    public init() {}

    /// Suspends until `deadline` (true) or until the task is cancelled (false, at once).
    public func sleep(until deadline: ContinuousClock.Instant) async -> Bool {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let reached = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                register(id: id, deadline: deadline, continuation: continuation)
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

    private func register(id: UInt64, deadline: ContinuousClock.Instant,
                          continuation: CheckedContinuation<Bool, Never>) {
        enum Action { case resume(Bool), wait(signal: Bool, startThread: Bool) }
        let action: Action = state.withLock { state in
            if state.cancelledEarly.remove(id) != nil { return .resume(false) }
            if deadline <= .now { return .resume(true) }
            state.waiting[id] = continuation
            state.heap.insert(Entry(deadline: deadline, id: id))
            let startThread = !state.threadStarted
            state.threadStarted = true
            let earlier = state.wakeAt.map { deadline < $0 } ?? true
            if earlier { state.wakeAt = deadline }
            return .wait(signal: earlier && !startThread, startThread: startThread)
        }
        switch action {
        case .resume(let reached):
            continuation.resume(returning: reached)
        case .wait(let signalThread, let startThread):
            if startThread {
                let thread = Thread { [self] in run() }
                thread.name = "fetchd-deadline"
                thread.start()
            } else if signalThread {
                signal.wake()
            }
        }
    }

    private func cancel(id: UInt64) {
        let continuation: CheckedContinuation<Bool, Never>? = state.withLock { state in
            guard let continuation = state.waiting.removeValue(forKey: id) else {
                state.cancelledEarly.insert(id)  // not registered yet; `sleep` removes it in the end
                return nil
            }
            // Cancelled entries stay in the heap until their deadline; drop them when they
            // are most of it, so a daemon whose fetches all finish early does not keep them.
            if state.heap.count > 64 && state.waiting.count < state.heap.count / 4 {
                let waiting = state.waiting
                state.heap = Heap(state.heap.unordered.filter { waiting[$0.id] != nil })
            }
            return continuation
        }
        continuation?.resume(returning: false)
    }

    /// The thread: resumes every sleeper whose deadline passed, then waits for the next one.
    private func run() {
        while true {
            let now = ContinuousClock.now
            var due: [CheckedContinuation<Bool, Never>] = []
            let waitSeconds: Double? = state.withLock { state in
                while let first = state.heap.min, first.deadline <= now {
                    _ = state.heap.removeMin()
                    if let continuation = state.waiting.removeValue(forKey: first.id) { due.append(continuation) }
                }
                guard let next = state.heap.min else {
                    // Nothing left to wait for: the thread ends (the next sleep starts another),
                    // so an idle daemon between wakes keeps no thread for this.
                    state.wakeAt = nil
                    state.threadStarted = false
                    return nil
                }
                let seconds = min(Self.seconds(now.duration(to: next.deadline)), Self.maximumWaitSeconds)
                state.wakeAt = now.advanced(by: .seconds(seconds))
                return seconds
            }
            for continuation in due { continuation.resume(returning: true) }
            guard let waitSeconds else { return }
            signal.wait(seconds: waitSeconds)
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
