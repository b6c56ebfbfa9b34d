/*
 * fakeclock: an LD_PRELOAD library that steps a process's wall clock (issue 7, clock jumps).
 *
 * CLOCK_REALTIME (clock_gettime, gettimeofday, time) gets the offset in seconds written to the
 * file named by FAKECLOCK_FILE, re-read at most every 100 ms of monotonic time; CLOCK_MONOTONIC
 * and CLOCK_BOOTTIME, and every timer, stay real. That is what a step of the system clock (NTP,
 * settimeofday) does to a program, without changing the machine's clock.
 *
 * Debian's libfaketime was tried first: it also rewrites absolute timerfd deadlines by the
 * wall-clock offset, even on CLOCK_BOOTTIME timers, so a step back of 3 h postponed the Swift
 * runtime's sleeps by 3 h: a hang of the library's making, which a real clock step does not cause.
 *
 *     cc -shared -fPIC -O2 -o fakeclock.so fakeclock.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static _Atomic long long offset_ns;
static _Atomic long long next_read_ns;
static atomic_flag reading = ATOMIC_FLAG_INIT;

static clock_gettime_fn real_clock_gettime(void) {
    static _Atomic(clock_gettime_fn) real;
    clock_gettime_fn fn = atomic_load(&real);
    if (!fn) {
        fn = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        atomic_store(&real, fn);
    }
    return fn;
}

/* The offset, re-read from the file when 100 ms have passed; one thread reads, others use the last. */
static long long current_offset_ns(void) {
    struct timespec now;
    if (real_clock_gettime()(CLOCK_MONOTONIC, &now) != 0) return atomic_load(&offset_ns);
    long long monotonic = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
    if (monotonic >= atomic_load(&next_read_ns) && !atomic_flag_test_and_set(&reading)) {
        const char *path = getenv("FAKECLOCK_FILE");
        FILE *file = path ? fopen(path, "r") : NULL;
        if (file) {
            long long seconds;
            if (fscanf(file, "%lld", &seconds) == 1) atomic_store(&offset_ns, seconds * 1000000000LL);
            fclose(file);
        }
        atomic_store(&next_read_ns, monotonic + 100000000LL);
        atomic_flag_clear(&reading);
    }
    return atomic_load(&offset_ns);
}

static void shift(struct timespec *ts, long long by_ns) {
    long long total = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + by_ns;
    ts->tv_sec = (time_t)(total / 1000000000LL);
    ts->tv_nsec = (long)(total % 1000000000LL);
    if (ts->tv_nsec < 0) { ts->tv_nsec += 1000000000L; ts->tv_sec -= 1; }
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    int rc = real_clock_gettime()(clock, ts);
    if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) shift(ts, current_offset_ns());
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz;
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
    return rc;
}

time_t time(time_t *out) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
