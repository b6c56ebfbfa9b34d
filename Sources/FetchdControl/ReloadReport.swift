/// What a `reload` request did: the configuration read again was taken, or rejected as a whole
/// (the previous one stays in force) for the problems listed.
public struct ReloadReport: Codable, Sendable, Equatable {
    /// Whether the new configuration is in force.
    public var applied: Bool
    /// Enabled handlers in force after the reload (the previous configuration's when rejected).
    public var handlers: Int
    /// Disabled handlers in force (`enabled = false`).
    public var disabledHandlers: Int
    /// Why it was rejected: `file:line: key: what is wrong`, one per problem.
    public var problems: [String]
    /// Settings that changed but take effect only at the next restart (`cache_dir`, ...).
    public var restartOnly: [String]

    /// Creates a report.
    public init(applied: Bool, handlers: Int, disabledHandlers: Int, problems: [String], restartOnly: [String]) {
        self.applied = applied
        self.handlers = handlers
        self.disabledHandlers = disabledHandlers
        self.problems = problems
        self.restartOnly = restartOnly
    }
}
