import FetchdControl
import Synchronization

extension ReloadService {
    /// Reloads asked for (by SIGHUP or the control socket), each answered with its report once
    /// done, in the order asked.
    final class Requests: Sendable {
        private struct State {
            var waiting: [CheckedContinuation<ReloadReport?, Never>] = []
            var closed = false
        }
        private let state = Mutex(State())
        private let arrived = WakeSignal()

        /// Creates the queue.
        init() {}

        /// Reloads and returns what happened; nil when fetchd is stopping and will not reload.
        func reload() async -> ReloadReport? {
            await withCheckedContinuation { (answer: CheckedContinuation<ReloadReport?, Never>) in
                let queued = state.withLock { state in
                    guard !state.closed else { return false }
                    state.waiting.append(answer)
                    return true
                }
                if queued { arrived.signal() } else { answer.resume(returning: nil) }
            }
        }

        /// The oldest request, waiting for one; nil once cancelled.
        func next() async -> CheckedContinuation<ReloadReport?, Never>? {
            while !Task.isCancelled {
                let first = state.withLock { state in state.waiting.isEmpty ? nil : state.waiting.removeFirst() }
                if let first { return first }
                await arrived.wait()
            }
            return nil
        }

        /// No more reloads: every request still waiting is answered nil.
        func close() {
            let waiting = state.withLock { state in
                state.closed = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for answer in waiting { answer.resume(returning: nil) }
        }
    }
}
