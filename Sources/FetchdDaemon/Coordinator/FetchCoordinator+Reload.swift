import FetchdConfig
import FetchdCore
import Foundation

extension FetchCoordinator {
    /// Puts a new configuration in force. Fetches in flight finish under the config they started
    /// with; removed handlers are simply no longer scheduled.
    public func apply(_ newConfig: LoadedConfig) {
        pipeline.resize(from: config.daemon, to: newConfig.daemon)
        config = newConfig
        rejectedReload = []
        // Budgets, sources or intervals may have changed: every plan is made again. Removed
        // handlers' entries go, unless a fetch, a wake or a push still counts on them.
        plans.forgetAll()
        runtime = runtime.filter { newConfig.handler(named: $0.key) != nil || $0.value.isBusy }
    }

    /// Records that a reload was rejected; `fetchctl status` and the status line show it.
    public func rejectReload(_ problems: [ConfigDiagnostic]) { rejectedReload = problems }

    /// Answers only when the actor is free: the watchdog's proof that the loop is not stuck.
    func heartbeat() {}

    /// Blocks the actor for good, to test that a stalled daemon is restarted by the watchdog.
    /// Reachable only through fetchd's hidden `--debug-stall-after` flag.
    func debugStall() {
        logger.warning("debug: stalling the main loop on purpose (--debug-stall-after)")
        while true { sleep(3600) }
    }
}
