import Foundation

extension FetchCoordinator {
    /// Answers only when the actor is free: the watchdog's proof that the loop is not stuck.
    func heartbeat() {}

    /// Blocks the actor for good, to test that a stalled daemon is restarted by the watchdog.
    /// Reachable only through fetchd's hidden `--debug-stall-after` flag.
    func debugStall() {
        logger.warning("debug: stalling the main loop on purpose (--debug-stall-after)")
        while true { sleep(3600) }
    }
}
