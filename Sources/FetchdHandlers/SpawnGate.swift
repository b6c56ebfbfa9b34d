import Synchronization

/// Lets one exec handler at a time go from its descriptor check (`DescriptorHeadroom`) to a
/// started program, so the room one check found is not taken by another program starting at the
/// same moment.
///
/// Why it matters: swift-subprocess 1.0.2 needs a descriptor at every step of a spawn, and two of
/// them fail badly when there is none. Half-way through a child's pipes it stops the process
/// (`fatalError`); and the pidfd it opens right after the spawn, to learn when the child exits,
/// is taken as "the kernel has no pidfd, watch SIGCHLD" when `pidfd_open` fails with EMFILE,
/// but on a kernel with pidfds nothing watches SIGCHLD: the library never sees the child exit,
/// never reaps it, and the run never returns, deadline or not. The handler then stays "running"
/// until fetchd restarts, and a stop waits for it. At a lowered RLIMIT_NOFILE with several
/// handlers due each second, concurrent spawns each found 16 descriptors free, then together used
/// more (`make test-tsan` met it first; the plain build too, within minutes). Spawns are
/// serialised inside the library anyway (it forks under a lock), so the gate costs nothing. Other
/// threads (sockets, the snapshot commit) can still take descriptors during a spawn: the margin
/// covers them, it does not exclude them.
final class SpawnGate: Sendable {
    /// The gate every exec handler of the process goes through.
    static let shared = SpawnGate()

    private struct State {
        var open = true
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    /// One pass through the gate, left exactly once (`leave()` may be called again harmlessly).
    final class Pass: Sendable {
        private let gate: SpawnGate
        private let left = Atomic<Bool>(false)

        fileprivate init(gate: SpawnGate) { self.gate = gate }

        /// Lets the next one through; only the first call counts.
        func leave() {
            if !left.exchange(true, ordering: .acquiringAndReleasing) { gate.reopen() }
        }

        deinit { leave() }
    }

    /// Waits for the gate and goes through it. Cancellation is not awaited on purpose: a spawn
    /// holds the gate for milliseconds, and a cancelled fetch still leaves by the same path.
    func enter() async -> Pass {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let enterNow = state.withLock { state in
                guard state.open else {
                    state.waiting.append(continuation)
                    return false
                }
                state.open = false
                return true
            }
            if enterNow { continuation.resume() }
        }
        return Pass(gate: self)
    }

    /// Hands the gate to the first waiter, or opens it.
    private func reopen() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.open = true
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
