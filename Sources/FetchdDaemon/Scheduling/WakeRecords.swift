import FetchdCore

/// What a wake keeps of its fetches as they end: their records (`FetchCoordinator.runDue`) or
/// only their tally (`runDueCounting`). The wake's batch of http fetches and its tasks for the
/// rest each fold their own, merged at the end.
protocol WakeRecords: Sendable {
    /// Nothing kept yet.
    init()
    /// Keeps one finished fetch.
    mutating func add(_ record: CompletedFetch)
    /// Keeps what `other` kept.
    mutating func merge(_ other: Self)
}

extension WakeTally: WakeRecords {
    /// Adds `other`'s counts.
    mutating func merge(_ other: WakeTally) {
        fetches += other.fetches
        newData += other.newData
        failures += other.failures
    }
}

extension Array: WakeRecords where Element == CompletedFetch {
    /// Appends `record`.
    mutating func add(_ record: CompletedFetch) { append(record) }
    /// Appends `other`'s records.
    mutating func merge(_ other: [CompletedFetch]) { append(contentsOf: other) }
}
