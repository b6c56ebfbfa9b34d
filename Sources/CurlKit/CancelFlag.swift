import Synchronization

/// A flag another task sets to stop a running transfer; libcurl's progress callback reads it.
public final class CancelFlag: Sendable {
    private let value = Atomic<Bool>(false)

    /// A flag that is not set.
    public init() {}

    /// Asks the transfer to stop at its next progress check (libcurl calls it often).
    public func cancel() { value.store(true, ordering: .relaxed) }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { value.load(ordering: .relaxed) }
}
