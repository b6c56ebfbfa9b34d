import FetchdCore

/// One registered fetch handler, as written in a `handlers.d/*.toml` file.
public struct HandlerConfig: Sendable, Equatable {
    /// The floor between two fetches (iOS's `setMinimumBackgroundFetchInterval`): a lower
    /// bound since the last attempt, never a promise that a fetch will happen then.
    public enum MinInterval: Sendable, Equatable {
        /// As often as the daemon wakes.
        case minimum
        /// Never on a schedule; only when asked (`fetchctl fetch`).
        case never
        /// At least this many seconds since the last attempt.
        case seconds(Double)
    }

    /// Unique name; also the snapshot directory's name.
    public var name: String
    /// What runs the fetch, with the keys of its kind (`kind`, `request`, `program`, `transfer`).
    public var options: Options
    /// Extra environment for the handler's programs (an `exec` handler's, a transfer's `on_complete`).
    public var environment: [String: String] = [:]
    /// The floor between fetches.
    public var minInterval: MinInterval = .minimum
    /// How long one fetch may run, in seconds.
    public var deadlineSeconds: Double
    /// How many snapshot versions to keep.
    public var retain: Int = Defaults.retain
    /// The largest snapshot accepted, in bytes.
    public var maxBytes: Int = Defaults.maxBytes
    /// Whether the handler is scheduled at all.
    public var enabled: Bool = true
    /// Where uses are learned from; empty: no learning, plain `min_interval`.
    public var usage: [UsageSource] = []
    /// Fetches per rolling 24 hours when the schedule is planned from usage.
    public var budgetPerDay: Int = Defaults.budgetPerDay
    /// When planned from usage, the content is never older than this, in seconds.
    public var maxStalenessSeconds: Double = Defaults.maxStalenessSeconds
    /// When planned from usage, how long before a predicted use its fetch is made, in seconds.
    public var leadSeconds: Double = Defaults.leadSeconds
    /// At most this many push wakes per window; more are coalesced into one deferred fetch.
    public var pushLimit: PushLimit = .standard
    /// The bearer token the push listener accepts for this handler (read from `push_token_file`);
    /// nil: the listener refuses pushes for it. A secret: never log it.
    public var pushToken: String?
    /// The network a scheduled fetch waits for.
    public var network: NetworkCondition = NetworkCondition(rawValue: Defaults.network) ?? .any
    /// The power a scheduled fetch waits for.
    public var power: PowerCondition = PowerCondition(rawValue: Defaults.power) ?? .any
    /// On battery, a scheduled fetch waits until the battery holds at least this many percent (0: never waits).
    public var batteryMinPercent: Int = Defaults.batteryMinPercent
    /// Its own failure-alert program (`on_failure`); nil: the main file's (`alertCommand`).
    public var onFailure: [String]?
    /// Failures in a row after which it counts as failing and its alert runs (`alert_after`;
    /// the main file's when unset).
    public var alertAfter: Int = Defaults.alertAfter
    /// Whether a scheduled fetch waits while the power profile is power-saver.
    public var powerSaver: PowerSaverPolicy = PowerSaverPolicy(rawValue: Defaults.powerSaver) ?? .deferFetch
    /// The file the handler was defined in.
    public var sourceFile: String
    /// The line of the handler's `[[handler]]` header.
    public var sourceLine: Int?
    /// The line of its `name` key (where a duplicate name is reported).
    public var nameLine: Int?
    /// A handler file, or a registration over D-Bus.
    public var origin: Origin = .file

    /// Creates a handler configuration.
    public init(name: String, options: Options, deadlineSeconds: Double = Defaults.deadlineSeconds,
                sourceFile: String = "<memory>", sourceLine: Int? = nil) {
        self.name = name
        self.options = options
        self.deadlineSeconds = deadlineSeconds
        self.sourceFile = sourceFile
        self.sourceLine = sourceLine
    }

    /// How a command is written (`command`, `on_complete`), for messages about one.
    static let commandExample = #"["/usr/bin/prog", "--flag"]"#

    /// Reads one `[[handler]]` table; returns nil when it cannot be used (problems are in `reader`).
    static func read(from reader: inout TableReader, daemon: DaemonConfig) -> HandlerConfig? {
        let name = reader.string("name", required: true)
        if let name, let problem = HandlerName.problem(with: name) {
            reader.report("name", "\"\(name)\" is not a safe handler name: \(problem)")
        }
        reader.handlerName = name
        let nameLine = reader.lines.line(of: "name", in: reader.section)
        let kindText = reader.string("kind", required: true)
        let kind = kindText.flatMap(Kind.init(rawValue:))
        if let kindText, kind == nil {
            reader.report("kind", "\"\(kindText)\" is not a handler kind; expected \"http\", \"exec\" or \"transfer\"")
        }
        let before = reader.diagnostics.count
        let options = kind.flatMap { readOptions(of: $0, from: &reader) }
        // Without usable options the common keys are still read, for their problems; the
        // handler itself is not returned.
        var handler = HandlerConfig(name: name ?? "", options: options ?? .exec(ExecOptions(command: [])),
                                    deadlineSeconds: daemon.defaultDeadlineSeconds,
                                    sourceFile: reader.file, sourceLine: reader.lines.headerLine(of: reader.section))
        handler.nameLine = nameLine
        if let environment = reader.stringTable("environment") {
            for (key, value) in environment.sorted(by: { $0.key < $1.key }) {
                if key.isEmpty || key.unicodeScalars.contains(where: { $0 == "=" || $0 == "\0" }) {
                    reader.report("environment", "\"\(key)\" is not a valid variable name (not empty, no \"=\" or NUL)")
                } else if value.unicodeScalars.contains("\0") {
                    reader.report("environment", "the value of \"\(key)\" contains a NUL character")
                } else {
                    handler.environment[key] = value
                }
            }
        }
        if kind == .transfer {
            handler.maxBytes = Defaults.transferMaxBytes
            // "As often as the daemon wakes" would download a large file every heartbeat.
            handler.minInterval = .seconds(Defaults.transferMinIntervalSeconds)
        }
        if let text = reader.string("min_interval") {
            switch text {
            case "minimum": handler.minInterval = .minimum
            case "never": handler.minInterval = .never
            default:
                if let seconds = reader.checkedDuration("min_interval", text, in: 0...(365 * 86_400)) {
                    handler.minInterval = .seconds(seconds)
                }
            }
        }
        if let seconds = reader.durationSeconds("deadline", in: 0.1...daemon.maxDeadlineSeconds) {
            handler.deadlineSeconds = seconds
        }
        if let retain = reader.int("retain", in: 1...1000) { handler.retain = retain }
        if let maxBytes = reader.int("max_bytes", in: 1...(64 * 1024 * 1024 * 1024)) { handler.maxBytes = maxBytes }
        if let enabled = reader.bool("enabled") { handler.enabled = enabled }
        handler.readAlertOptions(&reader, daemon: daemon)
        handler.readUsageOptions(&reader)
        handler.readPushOptions(&reader, readsSecrets: daemon.readsSecrets)
        handler.readConditionOptions(&reader)
        reader.reportUnknownKeys(known: HandlerKeys.known)
        guard name != nil, options != nil, reader.diagnostics.count == before,
              HandlerName.isValid(handler.name) else { return nil }
        return handler
    }
}
