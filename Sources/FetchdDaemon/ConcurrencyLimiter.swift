import Synchronization

/// Lets at most `limit` fetches run at once (`max_concurrent`); the rest wait in FIFO order.
/// A waiter whose task is cancelled (shutdown) stops waiting and is not granted a slot.
///
/// A `Mutex` rather than an actor, because the cancellation handler runs synchronously and
/// must remove its waiter at once.
final class ConcurrencyLimiter: Sendable {
    private struct State {
        var limit: Int
        var available: Int
        var waiters: [(id: Int, continuation: CheckedContinuation<Bool, Never>)] = []
        var nextID = 0
        var cancelledBeforeWaiting: Set<Int> = []
    }
    private let state: Mutex<State>

    init(limit: Int) { state = Mutex(State(limit: max(1, limit), available: max(1, limit))) }

    /// Changes the limit (a reload); running fetches keep their slots, waiters get new ones.
    func resize(to newLimit: Int) {
        let granted = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.available += max(1, newLimit) - state.limit
            state.limit = max(1, newLimit)
            var granted: [CheckedContinuation<Bool, Never>] = []
            while state.available > 0, !state.waiters.isEmpty {
                state.available -= 1
                granted.append(state.waiters.removeFirst().continuation)
            }
            return granted
        }
        granted.forEach { $0.resume(returning: true) }
    }

    /// Waits for a slot. Returns false when cancelled while waiting (no slot is held then).
    func acquire() async -> Bool {
        let id: Int? = state.withLock { state in
            if state.available > 0 {
                state.available -= 1
                return nil
            }
            defer { state.nextID += 1 }
            return state.nextID
        }
        guard let id else { return true }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let cancelled = state.withLock { state in
                    if state.cancelledBeforeWaiting.remove(id) != nil { return true }
                    state.waiters.append((id, continuation))
                    return false
                }
                if cancelled { continuation.resume(returning: false) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    state.cancelledBeforeWaiting.insert(id)
                    return nil
                }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(returning: false)
        }
    }

    /// Returns a slot, handing it straight to the longest waiter if there is one.
    func release() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            // available < 0 after a reload shrank the limit: retire this slot instead of handing it on.
            if state.waiters.isEmpty || state.available < 0 {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        waiter?.resume(returning: true)
    }
}
