import Foundation

/// A push (or several coalesced) waiting for its fetch: one fetch at `dueAt` with the newest
/// push's data.
public struct PendingPush: Sendable, Equatable {
    /// The handler.
    public var handler: String
    /// When the fetch runs: the earliest time the handler's push limit allows it.
    public var dueAt: Date
    /// The newest push's data (newest wins), if it carried any.
    public var data: String?
    /// When the newest push arrived; tells this version of the pending push from a later one.
    public var receivedAt: Date
    /// How many pushes were coalesced into it.
    public var pushes: Int
    /// For a push admitted to fetch at once: the daemon instance that runs it (already counted
    /// against the limit). A row whose owner is not the running daemon was left by one that
    /// stopped before the fetch was recorded: the next wake runs it. Nil for a deferred push.
    public var owner: String?

    /// Creates a pending push.
    public init(handler: String, dueAt: Date, data: String?, receivedAt: Date, pushes: Int, owner: String? = nil) {
        self.handler = handler
        self.dueAt = dueAt
        self.data = data
        self.receivedAt = receivedAt
        self.pushes = pushes
        self.owner = owner
    }
}

/// What the rate limit made of a push.
public enum PushAdmission: Sendable, Equatable {
    /// Within the limit: fetch now. Counted, and kept (superseding any deferred push) until the
    /// fetch is recorded (`PushLedger.finish`), so an acknowledged push survives a crash.
    case now(PendingPush)
    /// Over the limit: coalesced into the pending push, which runs at its `dueAt`.
    case deferred(PendingPush)
}

/// What became of a pending push that was due.
public enum DuePush: Sendable, Equatable {
    /// Counted as a push fetch: run it now, then `PushLedger.finish` it.
    case run(PendingPush)
    /// The limit still has no room (it was lowered by a reload): moved to the new `dueAt`.
    case rescheduled(PendingPush)
}
