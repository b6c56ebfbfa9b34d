/// Every default value of fetchd, in one place. `config/fetchd.toml` lists the same values,
/// commented out; a test keeps the two in step.
public enum Defaults {
    /// The program's version, reported by `--version`, the control protocol and the User-Agent.
    public static let version = "0.1.0"

    /// Main configuration file.
    public static let configFile = "/etc/fetchd/fetchd.toml"
    /// Drop-in folder for handler files, relative to the main file's folder.
    public static let handlersDirectoryName = "handlers.d"
    /// Where snapshots are written (FHS: cached data that can be fetched again).
    public static let cacheDirectory = "/var/cache/fetchd"
    /// Where the state database lives (FHS: state that must survive restarts).
    public static let stateDirectory = "/var/lib/fetchd"
    /// Where the control socket lives (FHS: runtime data).
    public static let runtimeDirectory = "/run/fetchd"
    /// The control socket's file name inside the runtime directory.
    public static let socketFileName = "control.sock"
    /// The state database's file name inside the state directory.
    public static let databaseFileName = "state.sqlite"

    /// How many exec handlers (programs) may run at the same time.
    public static let maxConcurrent = 4
    /// How many http fetches may be in flight at the same time (with `transferMaxActive`,
    /// libcurl's cap on open connections). `curl --parallel` allows 50; fetchd stays a little
    /// more polite.
    public static let httpMaxTransfers = 32
    /// How many http fetches, and connections, one host (name and port) gets at the same time;
    /// the figure browsers use.
    public static let httpMaxHostConnections = 6
    /// How long a handler may run before it is stopped, in seconds (iOS gives about 30 s).
    public static let deadlineSeconds = 30.0
    /// The longest deadline a handler may ask for, in seconds.
    public static let maxDeadlineSeconds = 600.0
    /// Time between SIGTERM and SIGKILL for an exec handler past its deadline, in seconds.
    public static let killGraceSeconds = 5.0
    /// How often the daemon wakes to look for due handlers, in seconds.
    public static let heartbeatSeconds = 60.0
    /// How long a scheduled fetch that is due may wait for a wake that runs something anyway,
    /// as a share of its `min_interval`: a 1-hour handler may run up to 6 minutes late. The
    /// content gets that much older in exchange for fewer device wake-ups.
    public static let wakeShareDelayFraction = 0.10
    /// How much earlier than planned a usage-planned fetch may run, in seconds, to share a
    /// wake that runs something anyway (never inside its own `min_interval` or budget): half
    /// the grid, so that with `wakeShareLateSeconds` every plan has a grid point within reach.
    public static let wakeShareEarlySeconds = 450.0
    /// How much later than planned a usage-planned fetch may run, in seconds, to share a wake.
    public static let wakeShareLateSeconds = 450.0
    /// The grid wakes gather on, in seconds: within its window a fetch runs at a multiple of
    /// this (of UTC time) when the window holds one. Independent handlers so meet without
    /// knowing of each other, as systemd's timers meet on whole minutes, and a handler whose
    /// `min_interval` is a multiple of it stays there once it is on it, with no delay at all.
    public static let wakeShareGridSeconds = 900.0
    /// The floor between fetches when a handler says `min_interval = "minimum"`, in seconds:
    /// one heartbeat, i.e. "as often as the daemon wakes".
    public static let minimumIntervalSeconds = 0.0
    /// How many snapshot versions each handler keeps.
    public static let retain = 3
    /// The largest snapshot a handler may produce, in bytes.
    public static let maxBytes = 16 * 1024 * 1024
    /// The total size of the cache across handlers, in bytes; the oldest versions go first.
    public static let cacheMaxBytes = 1024 * 1024 * 1024
    /// Permissions of the control socket: owner and group only.
    public static let socketMode = 0o660
    /// How many rows `fetchctl history` shows by default.
    public static let historyLimit = 20
    /// How many fetch results per handler the database keeps.
    public static let historyKeepPerHandler = 1000
    /// Fetches per rolling 24 hours of a handler whose schedule is planned from its usage.
    public static let budgetPerDay = 12
    /// A usage-planned handler's content is never older than this, in seconds.
    public static let maxStalenessSeconds = 86_400.0
    /// How long before a predicted use its fetch is made, in seconds.
    public static let leadSeconds = 120.0
    /// Push wakes per handler (`push_limit`): at most this many push fetches...
    public static let pushLimitCount = 6
    /// ...in any window of this many seconds (`"6/hour"`); more are coalesced into one deferred fetch.
    public static let pushLimitWindowSeconds = 3600.0
    /// The largest push data accepted, in bytes (APNs' payload limit).
    public static let pushDataMaxBytes = 4096
    /// The push listener's address (`push_listen`); empty: no listener.
    public static let pushListen = ""
    /// The most bytes of request line and headers the push listener reads from one request.
    public static let pushHeaderMaxBytes = 8192
    /// How long the push listener waits for a whole request (and keeps an idle connection), in seconds.
    public static let pushReadTimeoutSeconds = 10.0
    /// How many connections the push listener serves at once; more wait in the backlog.
    public static let pushMaxConnections = 64
    /// How many of those one source (an IPv4 address, an IPv6 /64, or all of loopback) may hold:
    /// a quarter, so one client cannot take them all.
    public static let pushMaxConnectionsPerSource = 16
    /// Pushes with a wrong or missing token one source may send per window before it is
    /// answered 429 until the window ends.
    public static let pushFailedTokensPerWindow = 10
    /// That window, in seconds.
    public static let pushFailedTokenWindowSeconds = 60.0
    /// The least entropy a push token must carry, in bits, as `PushTokenStrength` estimates it:
    /// 128 bits cannot be guessed online at any rate the listener answers.
    public static let pushTokenMinBits = 128
    /// The one address the push listener never locks out for wrong tokens
    /// (`push_trusted_proxy`): a proxy in front of it, whose every client shares its address.
    /// Empty: none; every source, loopback included, is locked out alike.
    public static let pushTrustedProxy = ""
    /// The network a handler's scheduled fetch waits for (`network`): `"any"` or `"unmetered"`.
    public static let network = "any"
    /// The power a handler's scheduled fetch waits for (`power`): `"any"` or `"ac"`.
    public static let power = "any"
    /// On battery, the charge a handler's scheduled fetch waits for, in percent (`battery_min`; 0: none).
    public static let batteryMinPercent = 0
    /// What a handler's scheduled fetch does while power-profiles-daemon's active profile is
    /// power-saver (`power_saver`): `"defer"` (wait until it ends) or `"run"`.
    public static let powerSaver = "defer"
    /// At or below this charge, in percent, with every battery discharging, the battery is
    /// critically low and every scheduled fetch waits: systemd's `BATTERY_LOW_CAPACITY_LEVEL`,
    /// the level of `systemd-ac-power --low` (systemd 254).
    public static let criticalBatteryPercent = 5
    /// Where the kernel lists power supplies (`power_supply_dir`).
    public static let powerSupplyDirectory = "/sys/class/power_supply"
    /// Whether the network counts as metered when NetworkManager is not on the system bus (`network_metered`).
    public static let networkMetered = false
    /// Which bus the D-Bus API is offered on (`dbus_api`): `"auto"` is the session bus for a
    /// user's daemon and the system bus otherwise.
    public static let dbusAPI = "auto"
    /// The most handlers one uid may register over D-Bus (`dbus_max_handlers`): enough for every
    /// application a person uses, few enough that one uid cannot fill the daemon with them.
    public static let dbusMaxHandlers = 64
    /// The largest snapshot a registered http handler may keep, in bytes
    /// (`dbus_max_snapshot_bytes`); also its `max_bytes` when the registration sets none.
    public static let dbusMaxSnapshotBytes = 16 * 1024 * 1024
    /// What one uid's registered http handlers may keep in the cache together, in bytes
    /// (`dbus_max_bytes`): the sum of each one's `max_bytes` × `retain`.
    public static let dbusMaxBytes = 1024 * 1024 * 1024
    /// What one uid's registered transfers may download together, in bytes
    /// (`dbus_max_transfer_bytes`): the sum of their `max_bytes`.
    public static let dbusMaxTransferBytes = 4 * 1024 * 1024 * 1024
    /// Fetches per rolling 24 hours one uid's registered handlers may make together
    /// (`dbus_max_fetches_per_day`): their schedules' sum, and the ceiling of FetchNow.
    public static let dbusMaxFetchesPerDay = 288
    /// Background transfers running at once (`transfer_max_active`); more wait their turn.
    public static let transferMaxActive = 2
    /// All background transfers together receive at most this many bytes per second
    /// (`transfer_max_bytes_per_second`; 0: no limit).
    public static let transferMaxBytesPerSecond = 0
    /// The largest file a transfer accepts when its handler sets no `max_bytes`.
    public static let transferMaxBytes = 64 * 1024 * 1024 * 1024
    /// The floor between two whole downloads of a transfer when its handler sets no `min_interval`.
    public static let transferMinIntervalSeconds = 86_400.0
    /// A transfer that receives nothing for this long is interrupted, to resume later (`stall_timeout`).
    public static let transferStallSeconds = 60.0
    /// How long a transfer's `on_complete` command may run before it is stopped.
    public static let onCompleteTimeoutSeconds = 300.0
    /// A handler's `on_failure` program runs once it has failed this many times in a row (`alert_after`).
    public static let alertAfter = 3
    /// The most `alert_after` may be set to.
    public static let alertAfterMax = 1000
    /// A handler's failure alert runs its program at most once in this many seconds, however
    /// often its failures start a new streak; the alert is still journaled.
    public static let alertHandlerIntervalSeconds = 3600.0
    /// All handlers' failure alerts together run their programs at most this many times per
    /// rolling hour (`alertWindowSeconds`); more are only journaled.
    public static let alertMaxPerHour = 10
    /// The window of `alertMaxPerHour`, in seconds.
    public static let alertWindowSeconds = 3600.0
    /// The `PATH` a handler's program starts with (its `environment` may set another): where a
    /// command's bare program name is looked up, when it runs and when configuration is checked.
    public static let programSearchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    /// libcurl's receive buffer for transfers: bulk downloads go faster with larger writes.
    public static let transferReceiveBufferBytes = 512 * 1024
    /// The exit status by which an exec handler reports `noData`.
    public static let execNoDataExitStatus: Int32 = 100

    /// The longest header fetchd sends from configuration (`user_agent`, `headers`,
    /// `accept_encoding`, `proxy`), in bytes of name and value: servers commonly refuse header
    /// lines over 8 KiB (nginx, Apache), and libcurl a string over 8 MB only at the fetch.
    public static let httpFieldMaxBytes = 8 * 1024

    /// The largest configuration file read, in bytes: ten thousand handlers take about 1 MiB.
    /// A bound on the parser's work and memory (a file is parsed whole).
    public static let configMaxFileBytes = 4 * 1024 * 1024
    /// The longest line of a configuration file, in bytes: room for a long token in a header.
    public static let configMaxLineBytes = 64 * 1024
    /// The most dots outside strings on one line of a configuration file: a dotted key or table
    /// header of thousands of parts (`[a.a.a...]`) takes the TOML parser time quadratic in their
    /// number (13 s for 10,000); no fetchd key has more than three.
    public static let configMaxLineDots = 32
}
