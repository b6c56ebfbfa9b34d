// swift-tools-version: 6.2
import PackageDescription

// fetchd: a background-fetch daemon for Linux.
// Each library target has one concern; the two executables are thin entry points.
let package = Package(
    name: "fetchd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "fetchd", targets: ["fetchd"]),
        .executable(name: "fetchctl", targets: ["fetchctl"]),
        .executable(name: "fetchd-runas", targets: ["fetchd-runas"]),
        // For applications written in Swift: fetchd's D-Bus API as a typed client
        // (examples/swift depends on it by path).
        .library(name: "FetchdClient", targets: ["FetchdClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // The push listener's HTTP server. No traits: fetchd needs neither swift-configuration
        // support nor full Foundation in it, and each costs build time.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
    ],
    targets: [
        // Typed C shim over libcurl's variadic calls, which Swift cannot call directly.
        .target(
            name: "CCurlShim",
            linkerSettings: [.linkedLibrary("curl")]
        ),
        // Owning Swift wrapper around a libcurl easy handle; no C type leaks past it. Crypto: a
        // body can be hashed as it is written, so the snapshot is never read back to hash it.
        .target(name: "CurlKit", dependencies: ["CCurlShim", "CPosixShim", "FetchdCore", .product(name: "Crypto", package: "swift-crypto")]),
        // Typed C shim over libsystemd (sd_notify, journal, sd-bus's variadic calls).
        .target(name: "CSystemdShim", linkerSettings: [.linkedLibrary("systemd")]),
        // systemd integration: readiness and watchdog, journald logging, socket activation, timers.
        .target(
            name: "FetchdSystemd",
            dependencies: ["CSystemdShim", .product(name: "Logging", package: "swift-log")]
        ),
        // The client library of fetchd's D-Bus API, for applications: no heavier than sd-bus
        // (FetchdSystemd's wrapper, which brings swift-log), so an application that depends on
        // it builds none of the daemon's packages (NIO, GRDB, TOMLKit, Crypto).
        .target(name: "FetchdClient", dependencies: ["FetchdSystemd"]),
        // Vocabulary shared by every module: results, durations, names, defaults.
        .target(name: "FetchdCore"),
        // Usage learning and fetch planning: pure, shared by the daemon and `fetchctl simulate`.
        // Optimised even in debug builds: the tests replay weeks of usage through it, which
        // takes a minute unoptimised and seconds optimised.
        .target(name: "FetchdPlanner", dependencies: ["FetchdCore"], swiftSettings: [.unsafeFlags(["-O"])]),
        // TOML configuration: loading, validation, diagnostics with file/line/key.
        .target(
            name: "FetchdConfig",
            // CCurlShim: URLs are checked by libcurl's own parser, as every fetch parses them.
            dependencies: ["FetchdCore", "CCurlShim", .product(name: "TOMLKit", package: "TOMLKit")]
        ),
        // Linux calls glibc hides behind _GNU_SOURCE (syncfs).
        .target(name: "CPosixShim"),
        // Atomic, versioned snapshots in the cache directory.
        .target(
            name: "FetchdSnapshots",
            dependencies: ["FetchdCore", "CPosixShim", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Durable per-handler state and fetch history (SQLite through GRDB).
        .target(
            name: "FetchdState",
            dependencies: ["FetchdCore", .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "GRDBSQLite", package: "GRDB.swift")]
        ),
        // Deadlines and waits on the continuous clock (CLOCK_BOOTTIME, which counts a suspend):
        // every fetch's deadline and the daemon's own timers.
        .target(
            name: "FetchdClock",
            dependencies: [
                "CPosixShim",
                // The deadline timer's queue of sleepers.
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        // Handlers and the completion contract: exec (a program, started by CPosixShim) and http (libcurl); background transfers.
        .target(
            name: "FetchdHandlers",
            dependencies: [
                "FetchdCore", "FetchdConfig", "FetchdClock", "CurlKit", "CPosixShim",
                // SHA-256 of a transfer, hashed while it downloads.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The versioned control protocol: requests, reports, their JSON, and the socket's client.
        .target(name: "FetchdControl", dependencies: ["FetchdCore"]),
        // The control socket's server (SwiftNIO), one transport of FetchdControl's vocabulary.
        .target(
            name: "FetchdControlServer",
            dependencies: [
                "FetchdControl", "FetchdCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The daemon: scheduling, running handlers, recording results.
        .target(
            name: "FetchdDaemon",
            dependencies: [
                "FetchdCore", "FetchdConfig", "FetchdSnapshots", "FetchdState",
                "FetchdHandlers", "FetchdClock", "FetchdControl", "FetchdControlServer", "FetchdSystemd", "CurlKit", "FetchdPlanner", "FetchdPush", "CPosixShim",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // Push: the listener (`push_listen`, the only module that speaks HTTP as a server), the
        // rate limit's rules and the deferred queue, over a storage the daemon provides.
        .target(
            name: "FetchdPush",
            dependencies: [
                "FetchdCore", "FetchdConfig", "FetchdControl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // HTTP/1.1 from a maintained server library, not a hand-written parser.
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ]
        ),
        .executableTarget(
            name: "fetchd",
            dependencies: [
                "FetchdDaemon", "FetchdConfig", "FetchdControlServer", "FetchdCore", "FetchdSnapshots", "FetchdSystemd",
                // The global-executor hook, set without dlsym (GlobalExecutor).
                "CPosixShim",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                // Swift concurrency's executor (FetchdMain).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "fetchctl",
            dependencies: [
                "FetchdControl", "FetchdConfig", "FetchdCore", "FetchdSystemd", "FetchdPlanner", "FetchdState",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The privileged part of the system service: starts a configured program as its user for
        // fetchd, which never runs as root (fetchd-runas(8)).
        .target(name: "FetchdRunas", dependencies: ["FetchdConfig", "FetchdCore", "FetchdHandlers", "FetchdSnapshots", "CPosixShim"]),
        .executableTarget(
            name: "fetchd-runas",
            dependencies: [
                "FetchdRunas", "FetchdHandlers", "FetchdCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Test-only tool: writes snapshots in a loop so tests can SIGKILL it mid-write.
        .executableTarget(name: "fetchd-test-helper", dependencies: ["FetchdSnapshots", "FetchdCore"]),
        // The fuzz targets: every parser of bytes fetchd did not write (config, traces, control
        // requests, response headers, push requests, JSON read back from disk), shared by the
        // libFuzzer binary and the test that replays their seeds.
        .target(
            name: "FetchdFuzzing",
            dependencies: [
                "FetchdConfig", "FetchdPlanner", "FetchdControl", "FetchdCore", "CurlKit", "FetchdHandlers",
                "FetchdSnapshots", "FetchdPush", "FetchdDaemon", "FetchdSystemd",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // libFuzzer's driver around FetchdFuzzing (`make fuzz`).
        .executableTarget(name: "fetchd-fuzz", dependencies: ["FetchdFuzzing"]),
        // Shared by the test targets: temp folders, locating built binaries, waiting.
        .target(name: "FetchdTestSupport", path: "Tests/FetchdTestSupport"),
        .testTarget(name: "FetchdCoreTests", dependencies: ["FetchdCore", "FetchdTestSupport"]),
        .testTarget(name: "CurlKitTests", dependencies: ["CurlKit", "FetchdCore", "FetchdTestSupport"]),
        .testTarget(name: "FetchdConfigTests", dependencies: ["FetchdConfig", "FetchdCore", "FetchdTestSupport"],
                    exclude: ["Fixtures"]),
        .testTarget(
            name: "FetchdControlTests",
            dependencies: [
                "FetchdControl", "FetchdControlServer", "FetchdCore", "FetchdTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "FetchdSnapshotsTests",
            dependencies: ["FetchdSnapshots", "FetchdCore", "FetchdTestSupport"]
        ),
        .testTarget(
            name: "FetchdHandlersTests",
            dependencies: ["FetchdHandlers", "FetchdCore", "FetchdConfig", "CurlKit", "FetchdTestSupport",
                           .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(name: "FetchdClockTests", dependencies: ["FetchdClock", "FetchdTestSupport"]),
        .testTarget(name: "FetchdPlannerTests", dependencies: ["FetchdPlanner", "FetchdCore"], resources: [.copy("Traces")]),
        .testTarget(
            name: "FetchdStateTests",
            dependencies: ["FetchdState", "FetchdCore", "FetchdTestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "FetchdPushTests",
            dependencies: [
                "FetchdPush", "FetchdControl", "FetchdConfig", "FetchdCore", "FetchdTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "FetchdDaemonTests",
            dependencies: [
                "FetchdDaemon", "FetchdControl", "FetchdConfig", "FetchdCore", "FetchdPlanner", "FetchdPush", "FetchdState",
                "FetchdSystemd", "FetchdTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Tests that run the built fetchd and fetchctl as a user would, outside systemd.
        .testTarget(
            name: "FetchdEndToEndTests",
            dependencies: ["FetchdClient", "FetchdControl", "FetchdCore", "FetchdHandlers", "FetchdSnapshots", "FetchdState", "FetchdTestSupport"]
        ),
        // Every fuzz target over its committed seeds (what `make fuzz` starts from).
        .testTarget(name: "FetchdFuzzingTests", dependencies: ["FetchdFuzzing", "FetchdTestSupport"]),
        // The same under a real systemd, as PID 1 of a namespace of its own.
        .testTarget(name: "FetchdSystemdTests", dependencies: ["FetchdTestSupport"]),
    ]
)
