import Foundation

/// Where the push ledger keeps what must survive a restart: when each handler's push fetches
/// were counted, and its one pending push. The daemon's state database is one (its conformance
/// lives in FetchdDaemon, so that the storage module never depends on this one).
public protocol PushStorage: Sendable {
    /// Where the pushes are kept, for messages (a file's path).
    var location: String { get }

    /// Runs `body` in one write transaction: all of its changes are durable when this returns,
    /// or none of them.
    func write<T>(_ body: (any PushRecords) throws -> T) throws -> T

    /// Every pending push, earliest due first.
    func pending() throws -> [PendingPush]

    /// Removes `push`, unless a newer push of its handler (another `receivedAt`) replaced it.
    func remove(_ push: PendingPush) throws
}

/// The pushes as one write transaction of a `PushStorage` sees them.
public protocol PushRecords {
    /// The pending push of `handler`, if any.
    func pending(of handler: String) throws -> PendingPush?

    /// Keeps `push` as its handler's one pending push, replacing any.
    func save(_ push: PendingPush) throws

    /// When the push fetches of `handler` after `start` were counted, oldest first.
    func counted(of handler: String, after start: Date) throws -> [Date]

    /// Counts a push fetch of `handler` at `date`, forgetting its counts before `oldest`.
    func count(_ handler: String, at date: Date, forgetting oldest: Date) throws
}
