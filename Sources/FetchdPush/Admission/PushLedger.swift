import FetchdCore
import Foundation

/// The push rate limit's rules: a handler's `push_limit` applied to each push as it arrives
/// and to each pending push as it falls due, each in one transaction of the storage, so that a
/// restart forgets neither the count nor a push it acknowledged.
public struct PushLedger: Sendable {
    /// Where the counts and pending pushes are kept.
    public let storage: any PushStorage

    /// A ledger over `storage`.
    public init(storage: any PushStorage) {
        self.storage = storage
    }

    /// Applies `limit` to a push of `handler` arriving at `now`, in one transaction: within the
    /// limit it is counted and kept as the handler's pending push, due now and owned by `owner`
    /// (the daemon instance that runs it at once), superseding any deferred one; over it, it is
    /// coalesced into the pending push (its data replaces the older data), due when the window
    /// next has room. Either way the push is on disk before the caller answers it.
    public func admit(of handler: String, data: String?, at now: Date, limit: PushLimit,
                      owner: String) throws -> PushAdmission {
        try storage.write { records in
            let previous = try records.pending(of: handler)
            // `receivedAt` tells a pending push from the one that replaced it (`finish`), to
            // the millisecond it is stored with: two pushes within one get distinct times.
            let received = previous.map { max(now, $0.receivedAt.addingTimeInterval(0.001)) } ?? now
            if let earliest = try Self.nextRoom(of: handler, at: now, limit: limit, in: records) {
                let pending = PendingPush(handler: handler, dueAt: earliest, data: data, receivedAt: received,
                                          pushes: (previous?.owner == nil ? previous?.pushes ?? 0 : 0) + 1)
                try records.save(pending)
                return .deferred(pending)
            }
            try Self.count(handler, at: now, in: records)
            let immediate = PendingPush(handler: handler, dueAt: now, data: data, receivedAt: received, pushes: 1, owner: owner)
            try records.save(immediate)
            return .now(immediate)
        }
    }

    /// The pending push of `handler` if it is due at `now` (within `tolerance` seconds), counted
    /// as a push fetch (unless it was counted when admitted: an owned one); or moved later when
    /// the limit has no room. Nil when none is due.
    public func takeDue(of handler: String, at now: Date, limit: PushLimit, tolerance: Double = 0.1) throws -> DuePush? {
        try storage.write { records in
            guard var pending = try records.pending(of: handler),
                  pending.dueAt <= now.addingTimeInterval(tolerance) else { return nil }
            if pending.owner != nil { return .run(pending) }
            if let earliest = try Self.nextRoom(of: handler, at: now, limit: limit, in: records), earliest > pending.dueAt {
                pending.dueAt = earliest
                try records.save(pending)
                return .rescheduled(pending)
            }
            try Self.count(handler, at: now, in: records)
            return .run(pending)
        }
    }

    /// Removes a push once its fetch is recorded, unless a newer push has replaced it meanwhile.
    public func finish(_ push: PendingPush) throws {
        try storage.remove(push)
    }

    /// Every pending push, earliest due first.
    public func pending() throws -> [PendingPush] {
        try storage.pending()
    }

    /// Nil when `limit` has room for one more push fetch at `now`; else the earliest time it has:
    /// when the oldest push that keeps the window full leaves it.
    private static func nextRoom(of handler: String, at now: Date, limit: PushLimit, in records: any PushRecords) throws -> Date? {
        let times = try records.counted(of: handler, after: now.addingTimeInterval(-limit.windowSeconds))
        guard times.count >= limit.count else { return nil }
        return times[times.count - limit.count].addingTimeInterval(limit.windowSeconds)
    }

    /// Counts a push fetch of `handler` at `now`, forgetting those older than the longest window.
    private static func count(_ handler: String, at now: Date, in records: any PushRecords) throws {
        try records.count(handler, at: now, forgetting: now.addingTimeInterval(-PushLimit.maxWindowSeconds))
    }
}
