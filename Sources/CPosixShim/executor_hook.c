// Swift concurrency's global-executor hook, reached by a reference the linker resolves.
//
// SwiftNIO installs its event loops as the global executor by looking the hook up with dlsym.
// When the Swift runtime is linked statically (--static-swift-stdlib, as fetchd is installed
// and packaged), the toolchain links it with --exclude-libs ALL, so the hook is not in the
// executable's dynamic symbol table and dlsym cannot find it; a reference from an object file
// still resolves, statically or against libswift_Concurrency.so.
#include <stdbool.h>
#include <stddef.h>

#include "CPosixShim.h"

// Declared by the runtime as a function pointer with Swift's calling convention; only its
// storage is touched here.
extern void *swift_task_enqueueGlobal_hook;

bool fetchd_install_enqueue_global_hook(void *hook) {
    void *expected = NULL;
    return __atomic_compare_exchange_n(&swift_task_enqueueGlobal_hook, &expected, hook, false,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
