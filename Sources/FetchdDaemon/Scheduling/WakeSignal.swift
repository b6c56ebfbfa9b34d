import FetchdClock
import Synchronization

/// Lets the wake clock's timer loop sleep until its next planned wake *or* until something
/// changed the plan (a fetch finished, so a handler's next eligible time moved). A signal sent
/// while nobody waits is kept, so none is lost between two waits.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    /// Wakes the waiter, or the next one if nobody waits now.
    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns after `duration` or at the first signal, whichever comes first (or when cancelled).
    func wait(atMost duration: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await DeadlineTimer.shared.sleep(for: duration) }
            group.addTask { await self.waitForSignal() }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns at the first signal (or when cancelled): no timer at all while nothing happens.
    func wait() async { await waitForSignal() }

    private func waitForSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
