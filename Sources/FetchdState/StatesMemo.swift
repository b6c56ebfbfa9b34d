import Synchronization

/// The handler states as last read from the database, kept until a write changes them: the
/// daemon is the database's only writer, and a wake, the timer's next look and the status line
/// after it would otherwise each read every handler's row again.
final class StatesMemo: Sendable {
    private struct Memo {
        /// Counts the writes to the states: a read begun before one must not be kept after it.
        var generation = 0
        var states: [String: HandlerState]?
        var reads = 0
    }

    private let memo = Mutex(Memo())

    /// The kept states, or those `load` reads (kept unless a write came meanwhile).
    func states(_ load: () throws -> [String: HandlerState]) rethrows -> [String: HandlerState] {
        let (generation, kept) = memo.withLock { ($0.generation, $0.states) }
        if let kept { return kept }
        let states = try load()
        memo.withLock { memo in
            memo.reads += 1
            if memo.generation == generation { memo.states = states }
        }
        return states
    }

    /// Forgets the kept states: a write changed (or may have changed) them.
    func invalidate() {
        memo.withLock { memo in
            memo.generation += 1
            memo.states = nil
        }
    }

    /// How many times the states were read from the database.
    var reads: Int { memo.withLock(\.reads) }
}
