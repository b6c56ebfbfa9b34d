import FetchdClock
import FetchdSystemd
import ServiceLifecycle

/// Pings the systemd watchdog at half its interval, but only after the coordinator answers:
/// if the daemon's loop is stuck, the pings stop and systemd restarts the service.
struct WatchdogService: Service {
    /// Answers when the coordinator is free.
    let heartbeat: any Heartbeat
    /// Sends the pings (`WATCHDOG=1`).
    let notifier: SystemdNotifier
    /// systemd's `WatchdogSec`: pinged at half of it.
    let interval: Duration

    /// Pings until graceful shutdown.
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
