import FetchdCore

/// How many fetches a wake ran and how they ended: what the scheduler and `fetchd --once` need
/// of a wake, without its records (in a wake of 10,000 the records alone were 3 MB; each one
/// is in the history and the journal already).
public struct WakeTally: Sendable, Equatable {
    /// Fetches run.
    public var fetches = 0
    /// Of which ended `newData`.
    public var newData = 0
    /// Of which failed or expired.
    public var failures = 0

    /// Nothing counted yet.
    public init() {}

    /// Of which ended `noData`.
    public var noData: Int { fetches - newData - failures }

    /// Counts one finished fetch.
    public mutating func add(_ record: CompletedFetch) {
        fetches += 1
        if record.result == .newData { newData += 1 }
        if record.result.isFailure { failures += 1 }
    }
}
