import Foundation

/// Answer to `ping`.
public struct PingReport: Codable, Sendable, Equatable {
    /// The daemon's version.
    public var daemonVersion: String
    /// The daemon's process id.
    public var pid: Int32

    /// Creates a report.
    public init(daemonVersion: String, pid: Int32) {
        self.daemonVersion = daemonVersion
        self.pid = pid
    }
}

/// Answer to `status`: the daemon and every handler.
public struct StatusReport: Codable, Sendable, Equatable {
    /// The daemon's version.
    public var daemonVersion: String
    /// The main config file in force.
    public var configFile: String?
    /// When the daemon started.
    public var startedAt: Date
    /// Loaded handlers, in config order.
    public var handlers: [HandlerStatus]
    /// Problems in the config: each disabled a handler (or was rejected at reload).
    public var configProblems: [ConfigProblem]
    /// The push listener's address (`push_listen`, with the port it bound), when it runs.
    public var pushListener: String?
    /// Where handler files are read from (`handlers_dir`): where to add one.
    public var handlersDirectory: String?
    /// When handlers run programs and each cannot have a control group of its own: how they
    /// run instead and what that costs; nil otherwise.
    public var programIsolation: String?

    /// Creates a report.
    public init(daemonVersion: String, configFile: String?, startedAt: Date, handlers: [HandlerStatus],
                configProblems: [ConfigProblem]) {
        self.daemonVersion = daemonVersion
        self.configFile = configFile
        self.startedAt = startedAt
        self.handlers = handlers
        self.configProblems = configProblems
    }

    /// The wire's keys are the properties' names in snake_case (`ControlProtocol.encoder`);
    /// `handlers_dir` is the config key's name, and is written here as the name that converts to it.
    enum CodingKeys: String, CodingKey {
        case daemonVersion, configFile, startedAt, handlers, configProblems, pushListener, programIsolation
        case handlersDirectory = "handlersDir"
    }
}

/// One handler's line in `fetchctl status`.
public struct HandlerStatus: Codable, Sendable, Equatable {
    /// The handler's name.
    public var name: String
    /// `http`, `exec` or `transfer`.
    public var kind: String
    /// Whether it is scheduled.
    public var enabled: Bool
    /// Whether a fetch is running now.
    public var running: Bool
    /// The last result's name, if it ever ran.
    public var lastResult: String?
    /// The last failure's reason.
    public var lastReason: String?
    /// When the last fetch started.
    public var lastAttemptAt: Date?
    /// When the last successful fetch finished.
    public var lastSuccessAt: Date?
    /// The earliest time the schedule allows the next fetch (nil: never scheduled).
    public var nextEligibleAt: Date?
    /// Why the next fetch is then, for a handler planned from its usage ("predicted use ...").
    public var planReason: String?
    /// `newData` results since the last `fetchctl status`.
    public var newDataSinceLastLook: Int
    /// Failures in a row.
    public var consecutiveFailures: Int
    /// The stable path of the latest snapshot, when there is one.
    public var snapshotPath: String?
    /// When a deferred push fetch runs (pushes over `push_limit`, coalesced), if one waits.
    public var pendingPushAt: Date?
    /// How many pushes were coalesced into that fetch.
    public var pendingPushes: Int?
    /// The handler's `push_limit`, e.g. `6/hour`.
    public var pushLimit: String?
    /// What its scheduled fetch waits for ("AC power"); nil when its conditions hold.
    public var waitingFor: String?
    /// For a transfer handler: its download in progress or waiting to resume; nil when none is.
    public var transfer: TransferStatus?
    /// Where it is defined, `file:line` (the status of one handler only).
    public var definedIn: String?
    /// Every reason it is not being fetched now, in the order the rules apply them; empty when
    /// the next wake fetches it (the status of one handler only).
    public var holds: [HoldReport]?
    /// Its own budget's use, when it learns its usage (the status of one handler only).
    public var budget: BudgetReport?
    /// Its latest attempts, newest first (the status of one handler only).
    public var recent: [HistoryEntry]?

    /// A handler that is not running and has no recorded fetch; the rest is set field by field.
    public init(name: String, kind: String, enabled: Bool) {
        self.name = name
        self.kind = kind
        self.enabled = enabled
        self.running = false
        self.newDataSinceLastLook = 0
        self.consecutiveFailures = 0
    }
}

/// A config problem as shown by `fetchctl status`.
public struct ConfigProblem: Codable, Sendable, Equatable {
    /// The file.
    public var file: String
    /// The line, when known.
    public var line: Int?
    /// The key, when one is to blame.
    public var key: String?
    /// The handler affected, when known.
    public var handler: String?
    /// What is wrong.
    public var message: String

    /// Creates a problem.
    public init(file: String, line: Int?, key: String?, handler: String?, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.handler = handler
        self.message = message
    }
}

/// Answer to `fetch`.
public struct FetchReport: Codable, Sendable, Equatable {
    /// The handler.
    public var handler: String
    /// The result's name; nil when the client did not wait.
    public var result: String?
    /// The failure reason.
    public var reason: String?
    /// How long the fetch took, in milliseconds (when waited for).
    public var durationMilliseconds: Int?
    /// The latest snapshot's stable path.
    public var snapshotPath: String?
    /// True when the fetch joined one already running instead of starting another.
    public var joinedRunning: Bool

    /// Creates a report.
    public init(handler: String, result: String? = nil, reason: String? = nil, durationMilliseconds: Int? = nil,
                snapshotPath: String? = nil, joinedRunning: Bool = false) {
        self.handler = handler
        self.result = result
        self.reason = reason
        self.durationMilliseconds = durationMilliseconds
        self.snapshotPath = snapshotPath
        self.joinedRunning = joinedRunning
    }

    /// The wire's keys are the properties' names in snake_case (`ControlProtocol.encoder`);
    /// `duration_ms` is shorter, and is written here as the name that converts to it.
    enum CodingKeys: String, CodingKey {
        case handler, result, reason, snapshotPath, joinedRunning
        case durationMilliseconds = "durationMs"
    }
}

/// One row of `fetchctl history`.
public struct HistoryEntry: Codable, Sendable, Equatable {
    /// When the fetch started.
    public var startedAt: Date
    /// How long it took, in milliseconds.
    public var durationMilliseconds: Int
    /// The result's name.
    public var result: String
    /// The failure reason.
    public var reason: String?
    /// What started it.
    public var trigger: String
    /// Snapshot size, when one was produced.
    public var bytes: Int?
    /// The snapshot version written.
    public var version: String?

    /// Creates an entry.
    public init(startedAt: Date, durationMilliseconds: Int, result: String, reason: String?, trigger: String,
                bytes: Int?, version: String?) {
        self.startedAt = startedAt
        self.durationMilliseconds = durationMilliseconds
        self.result = result
        self.reason = reason
        self.trigger = trigger
        self.bytes = bytes
        self.version = version
    }

    /// The wire's keys are the properties' names in snake_case (`ControlProtocol.encoder`);
    /// `duration_ms` is shorter, and is written here as the name that converts to it.
    enum CodingKeys: String, CodingKey {
        case startedAt, result, reason, trigger, bytes, version
        case durationMilliseconds = "durationMs"
    }
}

/// A background transfer's progress (`fetchctl status`, `fetchctl transfers`).
public struct TransferStatus: Codable, Sendable, Equatable {
    /// Where the transfer stands.
    public enum State: String, Codable, Sendable {
        /// Downloading now.
        case running
        /// A partial download waits to resume (after an interruption, a pause or a failure).
        case partial
    }

    /// Where the transfer stands.
    public var state: State
    /// Bytes downloaded so far (on disk).
    public var bytes: Int
    /// The whole file's size, when the server said.
    public var totalBytes: Int?
    /// The rate since this run started, while running.
    public var bytesPerSecond: Int?
    /// Seconds left at that rate, when the size is known.
    public var etaSeconds: Int?
    /// When a partial transfer resumes, when it is due (else `waitingFor` or the schedule says).
    public var resumesAt: Date?

    /// Creates a transfer status.
    public init(state: State, bytes: Int, totalBytes: Int?) {
        self.state = state
        self.bytes = bytes
        self.totalBytes = totalBytes
    }
}
