import FetchdCore
import Foundation

/// Answer to `push` (and the push listener's 202 body): whether the push fetches now or was
/// coalesced, over its handler's `push_limit`, into one deferred fetch.
public struct PushReport: Codable, Sendable, Equatable {
    /// The handler.
    public var handler: String
    /// True when the push was over the limit and waits in the one deferred fetch.
    public var deferred: Bool
    /// When the deferred fetch runs (the earliest time the limit allows).
    public var fetchAt: Date?
    /// How many pushes were coalesced into the deferred fetch (its data is the newest one's).
    public var coalescedPushes: Int?
    /// The handler's `push_limit`, e.g. `6/hour`.
    public var limit: String
    /// The reply for people: `fetching now`, or `rate limited: coalesced into one fetch at 14:03:07 ...`.
    public var message: String

    /// A push that fetches now.
    public static func now(handler: String, limit: String) -> PushReport {
        PushReport(handler: handler, deferred: false, limit: limit, message: "push accepted: fetching now")
    }

    /// A push coalesced into the fetch at `fetchAt`; the time is shown on the daemon's clock.
    public static func coalesced(handler: String, limit: String, fetchAt: Date, pushes: Int) -> PushReport {
        let message = "rate limited: coalesced into one fetch at \(SystemTimeZone.hourMinuteSecond(fetchAt))"
            + " (\(pushes) push\(pushes == 1 ? "" : "es") waiting, push_limit \(limit); the newest data is delivered)"
        return PushReport(handler: handler, deferred: true, fetchAt: fetchAt, coalescedPushes: pushes, limit: limit,
                          message: message)
    }

    /// Creates a report.
    public init(handler: String, deferred: Bool, fetchAt: Date? = nil, coalescedPushes: Int? = nil, limit: String,
                message: String) {
        self.handler = handler
        self.deferred = deferred
        self.fetchAt = fetchAt
        self.coalescedPushes = coalescedPushes
        self.limit = limit
        self.message = message
    }
}
