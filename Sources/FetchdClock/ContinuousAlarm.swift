import CPosixShim
import Glibc

/// A wake-up flag one thread waits on until a moment of the continuous clock, and others set:
/// a timerfd on `CLOCK_BOOTTIME` and an eventfd, waited on together with `poll`.
///
/// Why not a condition variable: it can wait only on `CLOCK_MONOTONIC`, which stops while the
/// machine is suspended, so a deadline that passed during a suspend would fire late unless the
/// waiter looked again every so often, and every look is a wake-up of an idle daemon. The boot
/// clock counts the suspend, so one wait is enough however long it is. Only when the kernel
/// gives no descriptor (EMFILE, ENFILE at creation) is it a condition variable after all, whose
/// waits last at most `fallbackMaximumWaitSeconds`: the waiter looks again that often.
///
/// A `wake()` that comes before the `wait` is kept, not lost: the next wait returns at once.
final class ContinuousAlarm: Sendable {
    /// The longest wait without descriptors (see above).
    static let fallbackMaximumWaitSeconds = 1.0

    private let descriptors: (timer: Int32, event: Int32)?
    private let fallback = ConditionSignal()

    /// An alarm on the boot clock, or on the fallback when no descriptor is left.
    init() {
        let timer = fetchd_boottime_timer()
        let event = timer >= 0 ? fetchd_event_counter() : -1
        if timer >= 0 && event >= 0 {
            descriptors = (timer, event)
        } else {
            if timer >= 0 { close(timer) }
            descriptors = nil
        }
    }

    deinit {
        if let descriptors {
            close(descriptors.timer)
            close(descriptors.event)
        }
    }

    /// Ends the current or the next `wait`.
    func wake() {
        guard let descriptors else { return fallback.wake() }
        var one: UInt64 = 1
        // Fails only when the counter is about to overflow, and then a wake is pending anyway.
        _ = write(descriptors.event, &one, MemoryLayout<UInt64>.size)
    }

    /// Waits until `wake()` or until `deadline` has passed (measured when the timer is armed, so
    /// whatever the caller did before does not make the wait late); without descriptors, at
    /// most `fallbackMaximumWaitSeconds`.
    func wait(until deadline: ContinuousClock.Instant) {
        let nanoseconds = Self.nanoseconds(ContinuousClock.now.duration(to: deadline))
        // Arming fails only for an invalid descriptor or value; waiting without the timer could
        // last forever, so the bounded wait then, like having no descriptors.
        guard let descriptors, fetchd_boottime_timer_arm(descriptors.timer, nanoseconds) == 0 else {
            return fallback.wait(seconds: min(Double(nanoseconds) / 1e9, Self.fallbackMaximumWaitSeconds))
        }
        var polled = [pollfd(fd: descriptors.timer, events: Int16(POLLIN), revents: 0),
                      pollfd(fd: descriptors.event, events: Int16(POLLIN), revents: 0)]
        while poll(&polled, 2, -1) < 0 && errno == EINTR {}
        var count: UInt64 = 0
        // Both are non-blocking: reading one that has not fired returns EAGAIN at once.
        _ = read(descriptors.timer, &count, MemoryLayout<UInt64>.size)
        _ = read(descriptors.event, &count, MemoryLayout<UInt64>.size)
    }

    /// `duration` in whole nanoseconds, at least 0 and at most `Int64.max` (a wait of 292 years).
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow || overflowAgain ? Int64.max : total
    }
}
