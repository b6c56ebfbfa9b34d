import Synchronization

/// A one-shot signal: `wait` returns once `fire` has been called, before or after it.
final class StopSignal: Sendable {
    private let state = Mutex<(waiter: CheckedContinuation<Void, Never>?, fired: Bool)>((nil, false))

    /// Wakes the waiter (now or when it comes).
    func fire() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.fired else { return nil }
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns once `fire` has been called.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}
