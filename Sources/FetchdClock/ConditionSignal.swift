import Glibc

/// A wake-up flag one thread waits on with a timeout and others set: a pthread condition
/// variable on `CLOCK_MONOTONIC`, so setting the wall clock does not stretch a wait.
///
/// A `wake()` that comes before the `wait` is kept, not lost: the next wait returns at once.
final class ConditionSignal: @unchecked Sendable {
    // @unchecked: the pthread objects are only touched under `mutex`, which is their purpose.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var woken = false

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Ends the current or the next `wait`.
    func wake() {
        pthread_mutex_lock(mutex)
        woken = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Waits until `wake()` or for `seconds`.
    func wait(seconds: Double) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var until = timespec()
        clock_gettime(CLOCK_MONOTONIC, &until)
        let nanoseconds = Int(until.tv_nsec) + Int(max(seconds, 0) * 1e9)
        until.tv_sec += nanoseconds / 1_000_000_000
        until.tv_nsec = nanoseconds % 1_000_000_000
        while !woken {
            if pthread_cond_timedwait(condition, mutex, &until) == ETIMEDOUT { break }
        }
        woken = false
    }
}
