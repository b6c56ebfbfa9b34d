import FetchdClock
import ServiceLifecycle

/// Test hook behind `--debug-stall-after`: stalls the coordinator so the wake clock stops pinging the watchdog.
struct DebugStallService: Service {
    /// What it stalls.
    let coordinator: FetchCoordinator
    /// How long after start.
    let after: Duration

    /// Sleeps `after`, then stalls the coordinator for good.
    func run() async {
        guard await DeadlineTimer.shared.sleep(for: after) else { return }
        await coordinator.debugStall()
    }
}
