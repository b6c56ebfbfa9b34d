import CPosixShim
import Glibc

/// A wake-up flag one thread waits on until a moment of the continuous clock, and others set:
/// a timerfd on `CLOCK_BOOTTIME` and an eventfd, waited on together with `poll`.
///
/// Why not a condition variable: it can wait only on `CLOCK_MONOTONIC`, which stops while the
/// machine is suspended, so a deadline that passed during a suspend would fire late unless the
/// waiter looked again every so often, and every look is a wake-up of an idle daemon. The boot
/// clock counts the suspend, so one wait is enough however long it is.
///
/// A `wake()` that comes before the `wait` is kept, not lost: the next wait returns at once.
final class ContinuousAlarm: Sendable {
    private let timer: Int32
    private let event: Int32

    /// Nil when the kernel gives no descriptor (EMFILE, ENFILE); the caller falls back then.
    init?() {
        let timer = fetchd_boottime_timer()
        guard timer >= 0 else { return nil }
        let event = fetchd_event_counter()
        guard event >= 0 else {
            close(timer)
            return nil
        }
        self.timer = timer
        self.event = event
    }

    deinit {
        close(timer)
        close(event)
    }

    /// Ends the current or the next `wait`.
    func wake() {
        var one: UInt64 = 1
        // Fails only when the counter is about to overflow, and then a wake is pending anyway.
        _ = write(event, &one, MemoryLayout<UInt64>.size)
    }

    /// Waits until `wake()` or until `deadline` has passed (measured when the timer is armed, so
    /// whatever the caller did before does not make the wait late).
    func wait(until deadline: ContinuousClock.Instant) {
        let nanoseconds = Self.nanoseconds(ContinuousClock.now.duration(to: deadline))
        var descriptors = [pollfd(fd: timer, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: event, events: Int16(POLLIN), revents: 0)]
        guard fetchd_boottime_timer_arm(timer, nanoseconds) == 0 else {
            // Cannot happen for a valid descriptor and value. Without the timer the wait could
            // last forever, and returning at once would spin: a bounded plain wait instead.
            _ = poll(&descriptors[1], 1, Int32(min(nanoseconds / 1_000_000, 1000)))
            return
        }
        while poll(&descriptors, 2, -1) < 0 && errno == EINTR {}
        var count: UInt64 = 0
        // Both are non-blocking: reading one that has not fired returns EAGAIN at once.
        _ = read(timer, &count, MemoryLayout<UInt64>.size)
        _ = read(event, &count, MemoryLayout<UInt64>.size)
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
