import FetchdCore

/// One registered fetch handler, as written in a `handlers.d/*.toml` file.
public struct HandlerConfig: Sendable, Equatable {
    /// What runs the fetch.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// An HTTP(S) GET through libcurl; the body becomes the snapshot.
        case http
        /// A program that writes its snapshot to `$FETCHD_OUTPUT` and reports by exit status.
        case exec
        /// A large HTTP(S) download outside the fetch deadline, resumed with range requests.
        case transfer
    }

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
    /// What runs the fetch.
    public var kind: Kind
    /// The URL fetched by an `http` handler.
    public var url: String?
    /// The argv run by an `exec` handler (no shell involved).
    public var command: [String]?
    /// Extra environment for an `exec` handler.
    public var environment: [String: String] = [:]
    /// The account an `exec` handler's program runs as; nil: fetchd's own user.
    public var user: UserAccount?
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
    /// Whether an `http` handler may read `file://` URLs (local use and tests only).
    public var allowFileURLs: Bool = false
    /// Whether the schedule honours the server's Retry-After, Cache-Control max-age and Expires.
    public var honorServerHints: Bool = true
    /// Extra request headers of an `http` handler.
    public var headers: [String: String] = [:]
    /// The User-Agent of an `http` handler; nil means `fetchd/VERSION`.
    public var userAgent: String?
    /// The Accept-Encoding an `http` handler offers; nil offers every encoding libcurl decodes.
    public var acceptEncoding: String?
    /// A proxy for an `http` handler; nil leaves libcurl's environment handling in place.
    public var proxy: String?
    /// A PEM file of CA certificates an `http` handler trusts instead of the system's.
    public var caFile: String?
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
    /// A transfer's expected SHA-256 (lower-case hex); a file that does not match is refused.
    public var sha256: String?
    /// A transfer receives at most this many bytes per second (0: only the global limit).
    public var maxBytesPerSecond: Int = 0
    /// A transfer that receives nothing for this long is interrupted, to resume later.
    public var stallSeconds: Double = Defaults.transferStallSeconds
    /// The argv run with the finished file's path appended when a transfer brings new data.
    public var onComplete: [String]?
    /// The file the handler was defined in.
    public var sourceFile: String
    /// The line of the handler's `[[handler]]` header.
    public var sourceLine: Int?

    /// Creates a handler configuration.
    public init(name: String, kind: Kind, deadlineSeconds: Double = Defaults.deadlineSeconds,
                sourceFile: String = "<memory>", sourceLine: Int? = nil) {
        self.name = name
        self.kind = kind
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
        let kindText = reader.string("kind", required: true)
        let kind = kindText.flatMap(Kind.init(rawValue:))
        if let kindText, kind == nil {
            reader.report("kind", "\"\(kindText)\" is not a handler kind; expected \"http\", \"exec\" or \"transfer\"")
        }
        let before = reader.diagnostics.count
        var handler = HandlerConfig(name: name ?? "", kind: kind ?? .exec,
                                    deadlineSeconds: daemon.defaultDeadlineSeconds,
                                    sourceFile: reader.file, sourceLine: reader.lines.headerLine(of: reader.section))
        handler.url = reader.string("url")
        handler.command = reader.stringArray("command", example: Self.commandExample)
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
        if let name = reader.string("user") {
            handler.user = UserAccount.named(name)
            if handler.user == nil {
                reader.report("user", "no user named \"\(name)\" on this system (getent passwd \(name)); create it or remove the key")
            }
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
        if let allow = reader.bool("allow_file_urls") { handler.allowFileURLs = allow }
        handler.readHTTPOptions(&reader)
        handler.readUsageOptions(&reader)
        handler.readPushOptions(&reader, readsSecrets: daemon.readsSecrets)
        handler.readConditionOptions(&reader)
        handler.readTransferOptions(&reader)
        if kind != nil {
            handler.checkKindSpecificKeys(&reader)
            handler.checkTransferKeys(&reader)
        }
        reader.reportUnknownKeys(known: HandlerKeys.known)
        guard name != nil, kind != nil, reader.diagnostics.count == before,
              HandlerName.isValid(handler.name) else { return nil }
        return handler
    }

    private func checkKindSpecificKeys(_ reader: inout TableReader) {
        switch kind {
        case .http:
            if let url {
                let lower = url.lowercased()
                if lower.hasPrefix("file://") {
                    if !allowFileURLs {
                        reader.report("url", "file:// URLs are refused unless the handler sets allow_file_urls = true")
                    }
                } else if !(lower.hasPrefix("http://") || lower.hasPrefix("https://")) {
                    reader.report("url", "\"\(url)\" is not an http:// or https:// URL")
                }
            } else if reader.table["url"] == nil {
                reader.report(nil, "an http handler needs a \"url\" key")
            }
            for key in HandlerKeys.execOnly where reader.table[key] != nil {
                reader.report(key, "\"\(key)\" belongs to exec handlers; this one is http")
            }
        case .exec:
            if command == nil && reader.table["command"] == nil {
                reader.report(nil, "an exec handler needs a \"command\" key: an argv array such as [\"/usr/bin/prog\", \"--flag\"]")
            }
            if let program = command?.first, program.isEmpty {
                reader.report("command", "the program (first element) is empty; expected a path such as \"/usr/bin/prog\"")
            }
            for key in HandlerKeys.httpOnly where reader.table[key] != nil {
                reader.report(key, "\"\(key)\" belongs to http handlers; this one is exec")
            }
        case .transfer:
            break  // checkTransferKeys
        }
    }
}
