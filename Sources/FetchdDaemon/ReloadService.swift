import FetchdConfig
import FetchdSystemd
import Logging
import ServiceLifecycle
import UnixSignals

/// Re-reads the configuration on SIGHUP (`systemctl reload fetchd`). A configuration with any
/// problem is rejected as a whole: the previous one stays in force, and the problems are logged
/// at priority err, shown in the status line and in `fetchctl status`.
struct ReloadService: Service {
    let coordinator: FetchCoordinator
    let notifier: SystemdNotifier
    let logger: Logger
    /// Loads the configuration the same way start-up did (same file, same overrides).
    let load: @Sendable () throws(ConfigLoadError) -> LoadedConfig

    func run() async {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            await reload()
        }
    }

    /// One reload: READY=1 follows RELOADING=1 whether the new configuration was taken or not.
    func reload() async {
        notifier.reloading()
        let problems: [ConfigDiagnostic]
        do {
            let loaded = try load()
            problems = loaded.diagnostics
            if problems.isEmpty {
                await coordinator.apply(loaded)
                logger.notice("configuration reloaded: \(loaded.handlers.count) handler(s)",
                              metadata: [MessageID.metadataKey: "\(MessageID.reloaded)"])
            }
        } catch {
            problems = error.diagnostics
        }
        for problem in problems {
            logger.error("reload rejected, previous configuration kept: \(problem.description)", metadata: problem.journalMetadata)
        }
        if !problems.isEmpty { await coordinator.rejectReload(problems) }
        notifier.reloaded(status: await coordinator.statusLine())
    }
}

/// Pings the systemd watchdog at half its interval, but only after the coordinator answers:
/// if the daemon's loop is stuck, the pings stop and systemd restarts the service.
struct WatchdogService: Service {
    let coordinator: FetchCoordinator
    let notifier: SystemdNotifier
    let interval: Duration

    func run() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await coordinator.heartbeat()
            notifier.watchdog()
            // The service group waits for this service to return before stopping the others:
            // the sleep must end as soon as shutdown begins, not half a watchdog interval later.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval / 2) }
        }
    }
}
