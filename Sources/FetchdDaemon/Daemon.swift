import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdSnapshots
import FetchdState
import Foundation
import Logging
import ServiceLifecycle

/// Assembles the daemon from a loaded configuration and runs it.
public struct Daemon {
    /// The configuration to run.
    public let config: LoadedConfig
    /// The daemon's logger.
    public let logger: Logger

    /// Creates a daemon.
    public init(config: LoadedConfig, logger: Logger) {
        self.config = config
        self.logger = logger
    }

    /// Opens the cache and the state database, creating their directories.
    public func openCoordinator() throws -> FetchCoordinator {
        for problem in config.diagnostics {
            logger.error("config: \(problem.description) (handler not loaded)")
        }
        try DurableFile.makeDirectory(config.daemon.stateDirectory, mode: 0o750)
        let snapshots = try SnapshotStore(root: config.daemon.cacheDirectory, maxTotalBytes: config.daemon.cacheMaxBytes)
        let state = try StateStore(path: config.daemon.databasePath)
        return FetchCoordinator(config: config, snapshots: snapshots, state: state, logger: logger)
    }

    /// Runs the due handlers once and returns (`fetchd --once`: iOS's "launch due to a
    /// background fetch event"). Returns the number of handlers that failed.
    public func runOnce() async throws -> Int {
        let coordinator = try openCoordinator()
        let before = Date()
        await coordinator.runDue(trigger: .timer)
        let report = await coordinator.status(markSeen: false)
        return report.handlers.filter { ($0.lastAttemptAt ?? .distantPast) >= before.addingTimeInterval(-1)
            && ($0.lastResult == "failed" || $0.lastResult == "expired") }.count
    }

    /// Runs until SIGTERM or SIGINT: the scheduler and the control socket under one service group.
    public func run() async throws {
        let coordinator = try openCoordinator()
        let scheduler = SchedulerService(coordinator: coordinator, logger: logger)
        let policy = try PeerPolicy(groupName: config.daemon.controlGroup)
        let handlerCount = config.handlers.count
        let logger = self.logger
        let socketPath = config.daemon.socketPath
        let control = ControlServer(
            path: socketPath, mode: config.daemon.socketMode, policy: policy,
            handler: DaemonControlHandler(coordinator: coordinator, scheduler: scheduler), logger: logger,
            onReady: {
                logger.info("fetchd \(Defaults.version) ready: \(handlerCount) handler(s), control socket \(socketPath)")
            })
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: scheduler), .init(service: control)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
        logger.info("fetchd stopped")
    }
}
