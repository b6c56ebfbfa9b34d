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

    /// Waits until `wake()` or until `duration` has passed on the continuous clock.
    func wait(for duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds > Int64.max / 1_000_000_000 ? Int64.max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        guard fetchd_boottime_timer_arm(timer, nanoseconds) == 0 else {
            // Cannot happen for a valid descriptor and value; waiting without the timer could
            // sleep forever, so return and let the caller look at its deadlines again.
            return
        }
        var descriptors = [pollfd(fd: timer, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: event, events: Int16(POLLIN), revents: 0)]
        while poll(&descriptors, 2, -1) < 0 && errno == EINTR {}
        var count: UInt64 = 0
        // Both are non-blocking: reading one that has not fired returns EAGAIN at once.
        _ = read(timer, &count, MemoryLayout<UInt64>.size)
        _ = read(event, &count, MemoryLayout<UInt64>.size)
    }
}
