import Foundation

extension FetchCoordinator {
    /// Answers only when the actor is free: the watchdog's proof that the loop is not stuck.
    func heartbeat() {}

    /// Writes the results the database refused earlier once more (`ResultCommitter`), when no
    /// later batch would: at the end of `fetchd --once` and at shutdown. Returns how many are
    /// still unrecorded.
    public func flushUnrecorded() async -> Int { await pipeline.committer.flushUnrecorded() }

    /// Returns once the failure alerts of the results so far are decided and their programs
    /// have ended: at the end of `fetchd --once`, whose process would otherwise cut them short.
    public func alertsSettled() async { await pipeline.alerts.settled() }

    /// Stops the failure alerts' programs still running and starts no more: at shutdown.
    public func stopAlerts() async { await pipeline.alerts.stop() }

    /// Blocks the actor for good, to test that a stalled daemon is restarted by the watchdog.
    /// Reachable only through fetchd's hidden `--debug-stall-after` flag.
    func debugStall() {
        logger.warning("debug: stalling the main loop on purpose (--debug-stall-after)")
        while true { sleep(3600) }
    }
}
