// Makes Swift's `Mutex` (the Synchronization module) visible to ThreadSanitizer, for
// `make test-tsan` only: the Makefile builds this into a shared library and LD_PRELOADs it.
//
// Why: `Mutex.withLock` takes and releases the lock inline with atomics, which the sanitized
// code's own instrumentation sees; but when the lock is contended it goes through
// `_MutexHandle._lockSlow` / `_tryLockSlow` / `_unlockSlow`, which live in the uninstrumented
// libswiftSynchronization.so and wait with a raw futex. ThreadSanitizer then sees no
// happens-before between two threads that took turns holding the lock and reports every access
// to the protected value as a race (Swift 6.3.1; a three-line program with four threads
// incrementing a Mutex-protected counter gets three reports). Without this, every Mutex in fetchd
// and in swift-subprocess (its process monitor and AsyncIO registrations; fetchd started programs
// with it until 2026-11-22) produces false reports.
//
// How: these definitions interpose the three slow-path functions (the executable's calls go
// through the PLT, and an LD_PRELOADed library comes before libswiftSynchronization.so), call the
// real ones and tell ThreadSanitizer what they did: an acquire of the lock's address after taking
// it, a release before giving it up. The fast paths' atomics are on the same address, so both
// paths synchronise with each other. The signatures are Swift's: `self` (the handle, passed by
// address) in the Swift context register, hence `swiftcall` and `swift_context` (clang only).
// In a process without ThreadSanitizer (the shell, Python, `swift test` itself) the weak
// `__tsan_*` symbols are null and the functions only forward.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>

void __tsan_acquire(void *address) __attribute__((weak));
void __tsan_release(void *address) __attribute__((weak));

// Synchronization._MutexHandle._lockSlow(UInt32), ._tryLockSlow() -> Bool, ._unlockSlow().
#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

#define SWIFTCALL __attribute__((swiftcall))
#define SELF __attribute__((swift_context))

typedef SWIFTCALL void (*LockSlow)(uint32_t, void *SELF);
typedef SWIFTCALL bool (*TryLockSlow)(void *SELF);
typedef SWIFTCALL void (*UnlockSlow)(void *SELF);

SWIFTCALL void fetchd_tsan_lock_slow(uint32_t state, void *SELF handle) __asm__(LOCK_SLOW);
SWIFTCALL bool fetchd_tsan_try_lock_slow(void *SELF handle) __asm__(TRY_LOCK_SLOW);
SWIFTCALL void fetchd_tsan_unlock_slow(void *SELF handle) __asm__(UNLOCK_SLOW);

// Resolved once, before any thread of the program runs.
static LockSlow realLockSlow;
static TryLockSlow realTryLockSlow;
static UnlockSlow realUnlockSlow;

__attribute__((constructor)) static void fetchd_tsan_resolve(void) {
    realLockSlow = (LockSlow)dlsym(RTLD_NEXT, LOCK_SLOW);
    realTryLockSlow = (TryLockSlow)dlsym(RTLD_NEXT, TRY_LOCK_SLOW);
    realUnlockSlow = (UnlockSlow)dlsym(RTLD_NEXT, UNLOCK_SLOW);
}

SWIFTCALL void fetchd_tsan_lock_slow(uint32_t state, void *SELF handle) {
    realLockSlow(state, handle);
    if (__tsan_acquire) __tsan_acquire(handle);
}

SWIFTCALL bool fetchd_tsan_try_lock_slow(void *SELF handle) {
    bool locked = realTryLockSlow(handle);
    if (locked && __tsan_acquire) __tsan_acquire(handle);
    return locked;
}

SWIFTCALL void fetchd_tsan_unlock_slow(void *SELF handle) {
    if (__tsan_release) __tsan_release(handle);
    realUnlockSlow(handle);
}
