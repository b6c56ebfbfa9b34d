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

    enum CodingKeys: String, CodingKey {
        case handler, reason
        case nextFetchAt = "next_fetch_at"
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
        enum CodingKeys: String, CodingKey {
            case at, source
            case utcOffsetSeconds = "utc_offset_seconds"
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

    /// Creates a report.
    public init(handler: String, learns: Bool, sources: [String], daysOfUse: Int, weekByHour: [[Double]],
                recentUses: [Use], plannedFetches: [Planned]) {
        self.handler = handler
        self.learns = learns
        self.sources = sources
        self.daysOfUse = daysOfUse
        self.weekByHour = weekByHour
        self.recentUses = recentUses
        self.plannedFetches = plannedFetches
    }

    enum CodingKeys: String, CodingKey {
        case handler, learns, sources
        case daysOfUse = "days_of_use"
        case weekByHour = "week_by_hour"
        case recentUses = "recent_uses"
        case plannedFetches = "planned_fetches"
    }
}
