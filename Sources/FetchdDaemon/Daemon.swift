import FetchdConfig
import FetchdControl
import FetchdControlServer
import FetchdCore
import FetchdHandlers
import FetchdPush
import FetchdSnapshots
import FetchdState
import FetchdSystemd
import Foundation
import Logging
import ServiceLifecycle

/// Assembles the daemon from a loaded configuration and runs it.
public struct Daemon {
    /// The configuration to run.
    public let config: LoadedConfig
    /// The daemon's logger.
    public let logger: Logger
    /// Loads the configuration again for a reload (same file, same command-line overrides);
    /// nil keeps the configuration given at start.
    public var reload: (@Sendable () throws(ConfigLoadError) -> LoadedConfig)?
    /// Test hook: stall the main loop this long after start (`--debug-stall-after`).
    public var debugStallAfter: Duration?

    /// Creates a daemon.
    public init(config: LoadedConfig, logger: Logger,
                reload: (@Sendable () throws(ConfigLoadError) -> LoadedConfig)? = nil) {
        self.config = config
        self.logger = logger
        self.reload = reload
    }

    /// Opens the cache and the state database, creating their directories.
    public func openCoordinator() throws -> FetchCoordinator {
        // A SIGCHLD ignored by whoever started fetchd would be inherited, and the kernel would
        // then reap programs before fetchd could read how they ended.
        signal(SIGCHLD, SIG_DFL)
        if let (before, after) = DescriptorLimit.raiseSoftToHard() {
            logger.debug("file-descriptor limit raised from \(before) to \(after) (programs still get \(before))")
        }
        // Programs a killed fetchd left in their control groups end here, before any new one starts.
        ProgramCgroup.removeLeftovers()
        // Said once a start where it matters: programs that cannot each have a control group
        // may outlive their deadline (fetchctl status says it too).
        if case .processGroups = ProgramCgroup.placement, config.startsPrograms {
            logger.warning("\(ProgramCgroup.placement)")
        } else {
            logger.debug("\(ProgramCgroup.placement)")
        }
        for problem in config.diagnostics {
            logger.error("config: \(problem.description) (handler not loaded)", metadata: problem.journalMetadata)
        }
        // Private to fetchd where it creates it (a user service's ~/.local/state/fetchd); the system
        // unit's StateDirectoryMode= makes it 0750 first.
        try DurableFile.makeDirectory(config.daemon.stateDirectory, mode: 0o700)
        let snapshots = try SnapshotStore(root: config.daemon.cacheDirectory, maxTotalBytes: config.daemon.cacheMaxBytes,
                                          reportRemovalFailure: { [logger] in logger.warning("cache: \($0)") })
        let state = try StateStore(path: config.daemon.databasePath)
        return FetchCoordinator(config: config, snapshots: snapshots, state: state, logger: logger)
    }

    /// Runs the due handlers once and returns (`fetchd --once`: iOS's "launch due to a
    /// background fetch event"). Returns what the wake did and cost.
    public func runOnce() async throws -> WakeReport {
        let coordinator = try openCoordinator()
        let before = WakeReport.Usage.atStart()
        let memory = AnonymousMemoryPeak()
        let tally = await coordinator.runDueCounting(trigger: .timer)
        await coordinator.alertsSettled()
        let sampling = memory.stop()
        var report = WakeReport(tally: tally, before: before, after: .atEnd())
        report.peakAnonymousKiB = sampling.peakKiB
        report.after.cpuMicroseconds -= sampling.cpuMicroseconds  // measuring is not the wake's work
        // No later batch will carry results the database refused: one more try, or say so.
        report.unrecorded = await coordinator.flushUnrecorded()
        close(coordinator.state)
        return report
    }

    /// Closes the state database before the process exits (see `StateStore.close`); what it
    /// could not do is said (nothing recorded is lost).
    private func close(_ state: StateStore) {
        do throws(StateStore.CloseProblem) {
            try state.close()
        } catch {
            logger.notice("the state database: \(error)")
        }
    }

    /// Runs until SIGTERM or SIGINT: wake clock, control socket, push listener, usage watchers,
    /// reload and watchdog services.
    public func run() async throws {
        let coordinator = try openCoordinator()
        let notifier = SystemdNotifier()
        let environment = ProcessInfo.processInfo.environment
        let planned = PlannedWakeTimer(
            underSystemd: environment["INVOCATION_ID"] != nil,
            userManager: getuid() != 0 && environment["XDG_RUNTIME_DIR"] != nil, logger: logger)
        // The first wake knows whether power-saver holds fetches back (`StartGate`).
        let profileRead = StartGate()
        let clock = WakeClock(coordinator: coordinator, logger: logger, notifier: notifier, planned: planned,
                              watchdogInterval: notifier.watchdogInterval, startGate: profileRead)
        let logger = self.logger
        let reloads = ReloadService.Requests()
        let control = ControlServer(
            path: config.daemon.socketPath, mode: config.daemon.socketMode,
            policy: try PeerPolicy(groupName: config.daemon.controlGroup),
            handler: DaemonControlHandler(coordinator: coordinator, clock: clock, reloads: reloads), logger: logger,
            activatedSocket: SocketActivation.takeListeningSocket(),
            onReady: { [socketPath = config.daemon.socketPath] in
                logger.notice("fetchd \(Defaults.version) ready, control socket \(socketPath)",
                              metadata: [MessageID.metadataKey: "\(MessageID.ready)"])
                notifier.ready(status: "starting: first wake")
            })
        // A service group stops its services in reverse order: the wake clock comes last so it
        // stops first, and fetches waited on through the control socket end before the socket does.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let debugStallAfter {
            services.append(.init(service: DebugStallService(coordinator: coordinator, after: debugStallAfter)))
        }
        if let address = config.daemon.pushListen {
            let intake = PushIntake(queue: coordinator, clock: clock)
            var limits = PushListener.Limits()
            limits.trustedProxy = config.daemon.pushTrustedProxy
            services.append(.init(service: PushListener(address: address, sink: intake, logger: logger, limits: limits)))
        }
        let readWatcher = ReadWatcher(uses: coordinator, cacheDirectory: config.daemon.cacheDirectory, logger: logger,
                                      wakes: clock)
        // Always in the group, so a reload can opt handlers in; it touches the system bus only
        // while some handler has `usage = ["session"]`.
        let sessionWatcher = SessionWatcher(uses: coordinator, logger: logger, wakes: clock)
        // Conditions: a change of power or network asks for a wake, so deferred handlers
        // run as soon as their conditions hold.
        let powerWatcher = PowerWatcher(conditions: coordinator, directory: config.daemon.powerSupplyDirectory,
                                        logger: logger, wakes: clock)
        let networkWatcher = NetworkWatcher(conditions: coordinator, logger: logger, wakes: clock)
        let profileWatcher = PowerProfileWatcher(conditions: coordinator, logger: logger, wakes: clock,
                                                 firstLook: profileRead)
        // What follows a change of the handlers in force, a reload's or a registration's: the
        // next wake planned again, and the watchers started or left as the handlers now need.
        let handlersChanged: @Sendable () async -> Void = {
            clock.reloaded()
            await readWatcher.refresh()
            sessionWatcher.refresh()
            networkWatcher.refresh()
            profileWatcher.refresh()
        }
        let busAPI = BusService(coordinator: coordinator, logger: logger, handlersChanged: handlersChanged)
        services += [
            .init(service: control),
            .init(service: readWatcher),
            .init(service: sessionWatcher),
            .init(service: powerWatcher),
            .init(service: networkWatcher),
            .init(service: profileWatcher),
            .init(service: busAPI),
            .init(service: planned),
            .init(service: ReloadService(target: coordinator, notifier: notifier, logger: logger,
                                         load: reload ?? { [config] () throws(ConfigLoadError) in config },
                                         afterApply: {
                                             await handlersChanged()
                                             busAPI.refresh()
                                         }, requests: reloads)),
            .init(service: clock),
        ]
        let group = ServiceGroup(configuration: .init(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        var failure: (any Error)?
        do { try await group.run() } catch { failure = error }
        await coordinator.stopAlerts()
        // Results the database refused would otherwise wait for a batch that never comes.
        _ = await coordinator.flushUnrecorded()
        close(coordinator.state)
        if let failure { throw failure }
        logger.info("fetchd stopped")
    }
}
