import FetchdHandlers
import FetchdSystemd
import ServiceLifecycle

/// Pings the systemd watchdog at half its interval, but only after the coordinator answers:
/// if the daemon's loop is stuck, the pings stop and systemd restarts the service.
struct WatchdogService: Service {
    /// Answers when the coordinator is free.
    let heartbeat: any Heartbeat
    let notifier: SystemdNotifier
    let interval: Duration

    func run() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await heartbeat.heartbeat()
            notifier.watchdog()
            // The service group waits for this service to return before stopping the others:
            // the sleep must end as soon as shutdown begins, not half a watchdog interval later.
            _ = await cancelWhenGracefulShutdown { await DeadlineTimer.shared.sleep(for: interval / 2) }
        }
    }
}

/// Test hook behind `--debug-stall-after`: stalls the coordinator so the watchdog stops pinging.
struct DebugStallService: Service {
    let coordinator: FetchCoordinator
    let after: Duration

    func run() async {
        guard await DeadlineTimer.shared.sleep(for: after) else { return }
        await coordinator.debugStall()
    }
}
