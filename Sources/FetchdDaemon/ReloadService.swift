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
    /// Runs after a new configuration took effect (a wake, so new handlers do not wait).
    let afterApply: @Sendable () async -> Void

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
                let previous = await coordinator.config.daemon
                for key in Self.restartOnlyChanges(from: previous, to: loaded.daemon) {
                    logger.warning("\(key) changed: it takes effect only when fetchd restarts")
                }
                await coordinator.apply(loaded)
                await afterApply()
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

extension ReloadService {
    /// Daemon settings that are fixed at start (directories, sockets, peer policy, cache cap).
    static func restartOnlyChanges(from old: DaemonConfig, to new: DaemonConfig) -> [String] {
        var changed: [String] = []
        if old.cacheDirectory != new.cacheDirectory { changed.append("cache_dir") }
        if old.stateDirectory != new.stateDirectory { changed.append("state_dir") }
        if old.socketPath != new.socketPath { changed.append("socket") }
        if old.socketMode != new.socketMode { changed.append("socket_mode") }
        if old.controlGroup != new.controlGroup { changed.append("control_group") }
        if old.cacheMaxBytes != new.cacheMaxBytes { changed.append("cache_max_bytes") }
        if old.pushListen != new.pushListen { changed.append("push_listen") }
        return changed
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
