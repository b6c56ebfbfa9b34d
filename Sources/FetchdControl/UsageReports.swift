import Foundation

/// Answer to `used`.
public struct UsedReport: Codable, Sendable, Equatable {
    /// The handler.
    public var handler: String
    /// When the handler's next fetch is planned now; nil when it does not learn its usage.
    public var nextFetchAt: Date?
    /// Why then.
    public var reason: String?

    /// Creates a report.
    public init(handler: String, nextFetchAt: Date? = nil, reason: String? = nil) {
        self.handler = handler
        self.nextFetchAt = nextFetchAt
        self.reason = reason
    }
}

/// Answer to `usage`: what fetchd learned about when a handler's content is used.
public struct UsageReport: Codable, Sendable, Equatable {
    /// One recorded use.
    public struct Use: Codable, Sendable, Equatable {
        /// When.
        public var at: Date
        /// The local clock's UTC offset then, in seconds.
        public var utcOffsetSeconds: Int
        /// Where it was learned from.
        public var source: String
        /// Creates a use.
        public init(at: Date, utcOffsetSeconds: Int, source: String) {
            self.at = at
            self.utcOffsetSeconds = utcOffsetSeconds
            self.source = source
        }
    }

    /// One planned fetch.
    public struct Planned: Codable, Sendable, Equatable {
        /// When.
        public var at: Date
        /// Why.
        public var reason: String
        /// Creates a planned fetch.
        public init(at: Date, reason: String) {
            self.at = at
            self.reason = reason
        }
    }

    /// The handler.
    public var handler: String
    /// Whether its schedule is planned from usage.
    public var learns: Bool
    /// Its usage sources.
    public var sources: [String]
    /// Distinct days with a use, in the model's memory.
    public var daysOfUse: Int
    /// Expected uses per local hour: 7 rows (Monday first) of 24.
    public var weekByHour: [[Double]]
    /// The latest uses, oldest first.
    public var recentUses: [Use]
    /// The fetches planned for the next 24 hours.
    public var plannedFetches: [Planned]
    /// How much likelier the next use is than the time of day says, by time since the latest
    /// use: (from, to) minutes and the factor; nil from a daemon that does not learn it.
    public var afterUse: [AfterUse]?

    /// A stretch of time after a use and how likely the next use is in it.
    public struct AfterUse: Codable, Sendable, Equatable {
        /// Minutes after the use, start and end.
        public var fromMinutes: Int
        /// See `fromMinutes`.
        public var toMinutes: Int
        /// The factor on the time of day's expected uses (1: as the time of day says).
        public var risk: Double
        /// Creates one.
        public init(fromMinutes: Int, toMinutes: Int, risk: Double) {
            self.fromMinutes = fromMinutes
            self.toMinutes = toMinutes
            self.risk = risk
        }
    }

    /// Creates a report.
    public init(handler: String, learns: Bool, sources: [String], daysOfUse: Int, weekByHour: [[Double]],
                recentUses: [Use], plannedFetches: [Planned], afterUse: [AfterUse]? = nil) {
        self.handler = handler
        self.learns = learns
        self.sources = sources
        self.daysOfUse = daysOfUse
        self.weekByHour = weekByHour
        self.recentUses = recentUses
        self.plannedFetches = plannedFetches
        self.afterUse = afterUse
    }
}
