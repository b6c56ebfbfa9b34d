import FetchdCore

extension HandlerConfig {
    /// Where uses of a handler's content are learned from.
    public enum UsageSource: String, Sendable, Equatable, CaseIterable {
        /// `fetchctl used NAME` (or the `used` control message): apps report their own launches.
        case explicit
        /// Another process opening the handler's snapshot content (`latest/content`): no
        /// integration needed from the consumer.
        case reads
        /// The user's session becoming active or unlocked, or the machine resuming (logind's
        /// signals on the system bus): a use of the device, for handlers whose content is
        /// wanted as soon as someone sits down (iOS fetches when the device is unlocked).
        case session
    }

    /// `min_interval` as a floor in seconds for the planner (`minimum` and `never` are 0: the
    /// planner is not asked about `never` handlers).
    public var minIntervalSeconds: Double {
        if case .seconds(let seconds) = minInterval { seconds } else { 0 }
    }

    /// Whether the handler's schedule is planned from its usage (else plain `min_interval`).
    public var learnsUsage: Bool { !usage.isEmpty }

    /// Reads `usage`, `budget`, `max_staleness` and `lead`.
    mutating func readUsageOptions(_ reader: inout TableReader) {
        if let sources = reader.stringArray("usage", example: #"["reads", "session"]"#) {
            var parsed: [UsageSource] = []
            for source in sources {
                if let known = UsageSource(rawValue: source) {
                    if !parsed.contains(known) { parsed.append(known) }
                } else {
                    let supported = UsageSource.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
                    reader.report("usage", "\"\(source)\" is not a usage source this version collects; expected \(supported)")
                }
            }
            usage = parsed
        }
        if let text = reader.string("budget") {
            if let perDay = FetchBudget.perDay(text) {
                budgetPerDay = perDay
            } else {
                reader.report("budget", "\"\(text)\" is not a fetch budget; expected e.g. \"12/day\" or \"1/hour\" (1 to 1440 a day)")
            }
        }
        if let seconds = reader.durationSeconds("max_staleness", in: 60...(365 * 86_400)) { maxStalenessSeconds = seconds }
        if let seconds = reader.durationSeconds("lead", in: 0...3600) { leadSeconds = seconds }
    }
}
