import CSystemdShim
import Foundation

/// Tells systemd about the daemon's life (`sd_notify`): readiness, a status line, reloads,
/// stopping and watchdog pings. Without `$NOTIFY_SOCKET` (not started by systemd) every call is
/// a no-op, so the daemon behaves the same in a terminal.
public struct SystemdNotifier: Sendable {
    /// Whether systemd listens for notifications.
    public let isEnabled: Bool

    /// Reads `$NOTIFY_SOCKET` from the environment.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        isEnabled = environment["NOTIFY_SOCKET"] != nil
    }

    /// The watchdog interval systemd expects pings within, if `WatchdogSec=` is set for us.
    public var watchdogInterval: Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(microseconds))
    }

    /// `READY=1` with the first status line: config is loaded and the control socket is bound.
    public func ready(status: String) { send("READY=1\nSTATUS=\(Self.clean(status))") }

    /// Replaces the status line shown by `systemctl status`.
    public func status(_ text: String) { send("STATUS=\(Self.clean(text))") }

    /// `RELOADING=1` with the monotonic timestamp systemd 253+ uses to match the reload.
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        send("RELOADING=1\nMONOTONIC_USEC=\(microseconds)\nSTATUS=reloading configuration")
    }

    /// `READY=1` after a reload, with the new status line.
    public func reloaded(status: String) { ready(status: status) }

    /// `STOPPING=1`: shutdown has begun.
    public func stopping() { send("STOPPING=1\nSTATUS=stopping: finishing running fetches") }

    /// `WATCHDOG=1`: the main loop is alive.
    public func watchdog() { send("WATCHDOG=1") }

    private func send(_ state: String) {
        guard isEnabled else { return }
        _ = sd_notify(0, state)
    }

    /// Status lines are single lines.
    private static func clean(_ text: String) -> String {
        text.replacingOccurrences(of: "\n", with: " ")
    }
}
