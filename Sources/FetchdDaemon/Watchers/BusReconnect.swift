import FetchdClock
import Foundation

/// The reconnect bookkeeping the bus clients (`SessionWatcher`, `NetworkWatcher`,
/// `PowerProfileWatcher`, `PlannedWakeTimer`) share: how many attempts in a row failed, whether a
/// retry is already waiting, and the delay before the next one (doubling from a second to at
/// most a minute, so a machine without a system bus is not polled hard).
struct BusReconnect {
    /// The first retry delay, in seconds; doubled per failure.
    static let firstDelaySeconds = 1.0
    /// The longest retry delay, in seconds.
    static let maxDelaySeconds = 60.0

    /// Failures in a row to reach the bus.
    private(set) var failures = 0
    /// Whether a retry is waiting to fire.
    var pending = false

    /// The connection is up: the next outage starts from the first delay again.
    mutating func connected() { failures = 0 }

    /// The delay before the next attempt after `failures` failures in a row, in seconds.
    var delaySeconds: Double {
        min(Self.maxDelaySeconds, Self.firstDelaySeconds * pow(2, Double(min(max(failures - 1, 0), 16))))
    }

    /// One more attempt failed.
    mutating func failed() { failures += 1 }

    /// Unless a retry is already waiting, runs `retry` after the next delay, as a child task of
    /// `group` (cancelled with it at shutdown).
    mutating func schedule(in group: inout DiscardingTaskGroup, _ retry: @escaping @Sendable () -> Void) {
        guard !pending else { return }
        failed()
        let seconds = delaySeconds
        pending = true
        group.addTask {
            guard await DeadlineTimer.shared.sleep(for: .seconds(seconds)) else { return }
            retry()
        }
    }
}
