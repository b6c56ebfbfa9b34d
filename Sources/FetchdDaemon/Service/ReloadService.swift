import FetchdConfig
import FetchdControl
import FetchdHandlers
import FetchdSystemd
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Re-reads the configuration on SIGHUP and on the control socket's `reload` request (what
/// `systemctl reload fetchd` runs, through `fetchctl reload`, so that the admin's command fails
/// when the configuration is rejected). A configuration with any problem is rejected as a whole:
/// the previous one stays in force, and the problems are logged at priority err, shown in the
/// status line and in `fetchctl status`, and answered to the request. One reload at a time, in
/// the order asked.
struct ReloadService: Service {
    let target: any ConfigTarget
    let notifier: SystemdNotifier
    let logger: Logger
    /// Loads the configuration the same way start-up did (same file, same overrides).
    let load: @Sendable () throws(ConfigLoadError) -> LoadedConfig
    /// Runs after a new configuration took effect (a wake, so new handlers do not wait).
    let afterApply: @Sendable () async -> Void
    /// The reloads asked for.
    let requests: Requests

    /// Reloads at each SIGHUP and each request, one at a time, until graceful shutdown; requests
    /// still waiting then are answered nil.
    func run() async {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        await withDiscardingTaskGroup { group in
            // SIGHUP joins the same queue, so a signal and a request never reload at once.
            group.addTask {
                for await _ in signals.cancelOnGracefulShutdown() { _ = await requests.reload() }
            }
            await cancelWhenGracefulShutdown {
                while let answer = await requests.next() { answer.resume(returning: await reload()) }
            }
            requests.close()
        }
    }

    /// One reload: READY=1 follows RELOADING=1 whether the new configuration was taken or not.
    func reload() async -> ReloadReport {
        notifier.reloading()
        var problems: [ConfigDiagnostic] = []
        var restartOnly: [String] = []
        do {
            let loaded = try await Self.loadApart(load)
            problems = loaded.diagnostics
            if problems.isEmpty {
                restartOnly = Self.restartOnlyChanges(from: await target.config.daemon, to: loaded.daemon)
                for key in restartOnly {
                    logger.warning("\(key) changed: it takes effect only when fetchd restarts")
                }
                await target.apply(loaded)
                await afterApply()
            }
        } catch {
            problems = error.diagnostics
        }
        for problem in problems {
            logger.error("reload rejected, previous configuration kept: \(problem.description)", metadata: problem.journalMetadata)
        }
        if !problems.isEmpty { await target.rejectReload(problems) }
        let handlers = await target.config.handlers
        let enabled = handlers.filter(\.enabled).count, disabled = handlers.count - enabled
        if problems.isEmpty {
            logger.notice("configuration reloaded: \(enabled) handler(s)\(disabled > 0 ? ", \(disabled) disabled" : "")",
                          metadata: [MessageID.metadataKey: "\(MessageID.reloaded)"])
        }
        notifier.reloaded(status: await target.statusLine(now: Date()))
        return ReloadReport(applied: problems.isEmpty, handlers: enabled, disabledHandlers: disabled,
                            problems: problems.map(\.description), restartOnly: restartOnly)
    }
}

extension ReloadService {
    /// Where configuration is read and parsed, off Swift's executor: parsing is blocking work
    /// (a file near the bounds of `ConfigText` takes a second or more), and the event-loop
    /// threads that run every task include the one that pings the watchdog and answers the
    /// control socket. Idle until a reload.
    private static let loadQueue = DispatchQueue(label: "fetchd-reload")

    /// Runs `load` on `loadQueue` and waits for it without holding a thread of the executor.
    static func loadApart(_ load: @escaping @Sendable () throws(ConfigLoadError) -> LoadedConfig)
        async throws(ConfigLoadError) -> LoadedConfig {
        let result: Result<LoadedConfig, ConfigLoadError> = await withCheckedContinuation { continuation in
            loadQueue.async { continuation.resume(returning: Result { () throws(ConfigLoadError) in try load() }) }
        }
        return try result.get()
    }

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
        if old.pushTrustedProxy != new.pushTrustedProxy { changed.append("push_trusted_proxy") }
        return changed
    }
}
