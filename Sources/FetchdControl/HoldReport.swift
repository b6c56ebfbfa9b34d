import Foundation

/// One reason a handler is not being fetched now, as `fetchctl status NAME` shows it: what
/// holds it, until when, and the figures. Made from the scheduling rules the wake applies
/// (`Eligibility.Hold` in the daemon), so it says what fetchd does.
public struct HoldReport: Codable, Sendable, Equatable {
    /// What holds a handler back; each has one word on the wire and in fetchctl(1).
    public enum Cause: String, Codable, Sendable, CaseIterable {
        /// `enabled = false`: fetched only when asked.
        case disabled
        /// `min_interval = "never"`: fetched only when asked or pushed.
        case onRequest = "on-request"
        /// A fetch of it runs, or a wake took it and starts it shortly.
        case fetching
        /// Its `min_interval` since the last attempt has not passed.
        case minInterval = "min-interval"
        /// The server's Retry-After, Cache-Control max-age or Expires has not passed.
        case serverFloor = "server-floor"
        /// The usage planner fetches it later, before a predicted use.
        case planned
        /// The planner retries it after a back-off, having failed several times in a row.
        case backoff
        /// Its own `budget` of the last 24 hours is spent.
        case budget
        /// The shared `global_budget` of the last 24 hours is spent.
        case globalBudget = "global-budget"
        /// Its conditions (network, power, battery) do not hold: it waits for them.
        case conditions
        /// power-profiles-daemon's profile is power-saver and its `power_saver` is "defer".
        case powerSaver = "power-saver"
        /// Every battery is discharging at a critically low charge: every scheduled fetch waits.
        case batteryCritical = "battery-critical"
        /// A push is held by `push_limit`: its fetch runs when the limit has room.
        case pushLimit = "push-limit"
        /// Its partial transfer resumes later (back-off after failures, or Retry-After).
        case transferRetry = "transfer-retry"
        /// Due, it waits up to a share of its `min_interval` for a wake that runs something anyway.
        case sharedWake = "shared-wake"
    }

    /// What holds it.
    public var cause: Cause
    /// When it stops holding; nil when it holds until something changes (a setting, a
    /// condition, a running fetch's end).
    public var until: Date?
    /// The figures, in words: "30 min since the last attempt", "on battery".
    public var detail: String

    /// Creates a reason.
    public init(_ cause: Cause, until: Date? = nil, detail: String) {
        self.cause = cause
        self.until = until
        self.detail = detail
    }
}

/// How much of a handler's own `budget` the last 24 hours used (`fetchctl status NAME`).
public struct BudgetReport: Codable, Sendable, Equatable {
    /// Attempts in the last 24 hours.
    public var used: Int
    /// The handler's `budget`, fetches per rolling 24 hours.
    public var perDay: Int

    /// Creates a report.
    public init(used: Int, perDay: Int) {
        self.used = used
        self.perDay = perDay
    }
}
