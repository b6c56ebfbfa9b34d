import FetchdCore
import Foundation

/// Daemon-wide settings from the main file, `fetchd.toml`.
public struct DaemonConfig: Sendable, Equatable {
    /// Where snapshots are written.
    public var cacheDirectory: String = Defaults.cacheDirectory
    /// Where the state database lives.
    public var stateDirectory: String = Defaults.stateDirectory
    /// Where runtime files (the control socket) live.
    public var runtimeDirectory: String = Defaults.runtimeDirectory
    /// The control socket's path; nil means `<runtime_dir>/control.sock`.
    public var socketPathOverride: String?
    /// fetchd-runas's socket (`--runas-socket`): programs are started there, not by fetchd.
    public var runasSocket: String?
    /// The folder of handler files; relative paths are taken from the main file's folder.
    public var handlersDirectory: String = Defaults.handlersDirectoryName
    /// How many exec handlers may run at once.
    public var maxConcurrent: Int = Defaults.maxConcurrent
    /// How many http fetches may be in flight at once.
    public var httpMaxTransfers: Int = Defaults.httpMaxTransfers
    /// How many http fetches, and connections, one host gets at once.
    public var httpMaxHostConnections: Int = Defaults.httpMaxHostConnections
    /// The deadline of handlers that do not set one, in seconds.
    public var defaultDeadlineSeconds: Double = Defaults.deadlineSeconds
    /// The longest deadline any handler may have, in seconds.
    public var maxDeadlineSeconds: Double = Defaults.maxDeadlineSeconds
    /// Time between SIGTERM and SIGKILL for exec handlers past their deadline, in seconds.
    public var killGraceSeconds: Double = Defaults.killGraceSeconds
    /// Time between wakes that look for due handlers, in seconds.
    public var heartbeatSeconds: Double = Defaults.heartbeatSeconds
    /// Total cache size cap, in bytes.
    public var cacheMaxBytes: Int = Defaults.cacheMaxBytes
    /// The control socket's permission bits.
    public var socketMode: Int = Defaults.socketMode
    /// A group whose members may use the control socket besides root and the daemon's user.
    public var controlGroup: String?
    /// `controlGroup`'s id, looked up when the configuration was read.
    public var controlGroupID: UInt32?
    /// Fetches per rolling 24 hours of all usage-planned handlers together; nil: no shared cap.
    public var globalBudgetPerDay: Int?

    /// Where the push listener takes HTTP pushes; nil (the default): no listener.
    public var pushListen: ListenAddress? = ListenAddress.parse(Defaults.pushListen)
    /// The one address the push listener never locks out for wrong tokens (`push_trusted_proxy`):
    /// an IP address, or empty for none.
    public var pushTrustedProxy: String = Defaults.pushTrustedProxy

    /// Where power supplies are listed (`/sys/class/power_supply`; a fake tree in tests).
    public var powerSupplyDirectory: String = Defaults.powerSupplyDirectory
    /// Whether the network counts as metered while NetworkManager is not on the system bus.
    public var networkMetered: Bool = Defaults.networkMetered
    /// Whether handler files' secrets (`push_token_file`) are read; not a config key: false when
    /// a tool loads the config only for its schedules (`fetchctl simulate --config`).
    public var readsSecrets = true
    /// Which bus the D-Bus API is offered on (`dbus_api`).
    public var dbusAPI: DBusAPI = DBusAPI(rawValue: Defaults.dbusAPI) ?? .auto
    /// What each uid may hold through handlers registered over D-Bus (`dbus_max_*`).
    public var registrationQuota = RegistrationQuota()
    /// Background transfers running at once (`transfer_max_active`).
    public var transferMaxActive: Int = Defaults.transferMaxActive
    /// Bytes per second all transfers together receive at most (`transfer_max_bytes_per_second`; 0: no limit).
    public var transferMaxBytesPerSecond: Int = Defaults.transferMaxBytesPerSecond
    /// The program run when a handler without its own `on_failure` starts failing and when it
    /// recovers (`on_failure`); nil: none.
    public var onFailure: [String]?
    /// Failures in a row after which a handler counts as failing and its alert runs (`alert_after`).
    public var alertAfter: Int = Defaults.alertAfter

    /// A configuration with every default.
    public init() {}

    /// The control socket path actually used.
    public var socketPath: String {
        socketPathOverride ?? runtimeDirectory + "/" + Defaults.socketFileName
    }

    /// The state database's path.
    public var databasePath: String { stateDirectory + "/" + Defaults.databaseFileName }

    /// Every key the main file accepts, for unknown-key suggestions.
    static let knownKeys = [
        "cache_dir", "state_dir", "runtime_dir", "socket", "handlers_dir", "max_concurrent",
        "http_max_transfers", "http_max_host_connections",
        "default_deadline", "max_deadline", "kill_grace", "heartbeat", "cache_max_bytes",
        "socket_mode", "control_group", "global_budget", "push_listen", "push_trusted_proxy",
        "power_supply_dir", "network_metered", "dbus_api", "transfer_max_active", "transfer_max_bytes_per_second",
        "on_failure", "alert_after",
    ] + RegistrationQuota.keys

    /// Where `org.fetchd.Fetchd1` is offered.
    public enum DBusAPI: String, Sendable, Equatable, CaseIterable {
        /// The session bus for a daemon of a user's service manager, else the system bus.
        case auto
        /// The system bus.
        case system
        /// The user's session bus.
        case session
        /// Nowhere: applications cannot register handlers.
        case off
    }

    /// Reads the main file's table over `base`, recording problems in `reader`: a key the table
    /// does not hold keeps `base`'s value, so a drop-in of the main file (`fetchd.toml.d`) is
    /// read over what the files before it set.
    static func read(from reader: inout TableReader, over base: DaemonConfig = DaemonConfig()) -> DaemonConfig {
        var config = base
        if let value = reader.string("cache_dir") { config.cacheDirectory = value }
        if let value = reader.string("state_dir") { config.stateDirectory = value }
        if let value = reader.string("runtime_dir") { config.runtimeDirectory = value }
        if reader.holds("socket") { config.socketPathOverride = reader.string("socket") }
        if let value = reader.string("handlers_dir") { config.handlersDirectory = value }
        for (key, path) in [("cache_dir", config.cacheDirectory), ("state_dir", config.stateDirectory),
                            ("runtime_dir", config.runtimeDirectory)] where path.isEmpty {
            reader.report(key, "the path is empty; expected a directory such as \"/var/lib/fetchd\"")
        }
        if let value = reader.int("max_concurrent", in: 1...1024) { config.maxConcurrent = value }
        if let value = reader.int("http_max_transfers", in: 1...1024) { config.httpMaxTransfers = value }
        if let value = reader.int("http_max_host_connections", in: 1...1024) { config.httpMaxHostConnections = value }
        if let value = reader.durationSeconds("max_deadline", in: 1...86_400) { config.maxDeadlineSeconds = value }
        if let value = reader.durationSeconds("default_deadline", in: 0.1...config.maxDeadlineSeconds) {
            config.defaultDeadlineSeconds = value
        } else {
            // An unset default never exceeds a lowered max_deadline.
            config.defaultDeadlineSeconds = min(config.defaultDeadlineSeconds, config.maxDeadlineSeconds)
        }
        // Capped well inside the unit's TimeoutStopSec=30s, so a stop never ends in SIGKILL
        // before the stopped handlers' results are recorded.
        if let value = reader.durationSeconds("kill_grace", in: 0...20) { config.killGraceSeconds = value }
        if let value = reader.durationSeconds("heartbeat", in: 1...86_400) { config.heartbeatSeconds = value }
        if let value = reader.int("cache_max_bytes", in: 1024...Int.max) { config.cacheMaxBytes = value }
        if let text = reader.string("socket_mode") {
            if let mode = Int(text, radix: 8), (0...0o777).contains(mode) {
                config.socketMode = mode
            } else {
                reader.report("socket_mode", "\"\(text)\" is not an octal permission mode; expected e.g. \"0660\"")
            }
        }
        if reader.holds("control_group") {
            config.controlGroup = reader.string("control_group").flatMap { $0.isEmpty ? nil : $0 }
            config.controlGroupID = config.controlGroup.flatMap { getgrnam($0)?.pointee.gr_gid }
            if let group = config.controlGroup, config.controlGroupID == nil {
                reader.report("control_group", "no group named \"\(group)\" on this system (getent group \(group)); "
                                  + "create it (groupadd \(group)) or unset control_group")
            }
        }
        if let text = reader.string("global_budget"), !text.isEmpty {
            if let perDay = FetchBudget.perDay(text, maximum: 1_000_000) {
                config.globalBudgetPerDay = perDay
            } else {
                reader.report("global_budget", "\"\(text)\" is not a fetch budget; expected e.g. \"200/day\", or \"\" for none")
            }
        }
        if let text = reader.string("push_listen"), !text.isEmpty {
            if let address = ListenAddress.parse(text) {
                config.pushListen = address
            } else {
                reader.report("push_listen", "\"\(text)\" is not a listen address; expected an IP address and port such as \"127.0.0.1:8617\" or \"[::1]:8617\", or \"\" for no listener")
            }
        }
        if let text = reader.string("push_trusted_proxy") {
            if text.isEmpty || ListenAddress.isIPv4(text) || ListenAddress.isIPv6(text) {
                config.pushTrustedProxy = text
            } else {
                reader.report("push_trusted_proxy", "\"\(text)\" is not an IP address; expected the address the proxy in front of the push listener connects from, such as \"127.0.0.1\" or \"::1\", or \"\" for none")
            }
        }
        if let path = reader.string("power_supply_dir") {
            if path.hasPrefix("/") {
                config.powerSupplyDirectory = path
            } else {
                reader.report("power_supply_dir", "\"\(path)\" is not an absolute path; expected e.g. \"/sys/class/power_supply\"")
            }
        }
        if let metered = reader.bool("network_metered") { config.networkMetered = metered }
        if let text = reader.string("dbus_api") {
            if let api = DBusAPI(rawValue: text) { config.dbusAPI = api } else {
                reader.report("dbus_api", "\"\(text)\" is not a bus; expected \"auto\", \"system\", \"session\" or \"off\"")
            }
        }
        config.registrationQuota = RegistrationQuota.read(from: &reader, over: config.registrationQuota)
        if let value = reader.int("transfer_max_active", in: 1...64) { config.transferMaxActive = value }
        if let value = reader.int("transfer_max_bytes_per_second", in: 0...Int.max) { config.transferMaxBytesPerSecond = value }
        if reader.holds("on_failure") {
            config.onFailure = HandlerConfig.readAlertProgram(from: &reader).flatMap { $0.isEmpty ? nil : $0 }
        }
        if let value = reader.int("alert_after", in: 1...Defaults.alertAfterMax) { config.alertAfter = value }
        reader.reportUnknownKeys(known: knownKeys + ["handler"])
        return config
    }
}
