#define _GNU_SOURCE
#include <unistd.h>
#include <sys/resource.h>
#include "CPosixShim.h"

int fetchd_syncfs(int fd) {
    return syncfs(fd);
}

int fetchd_nice_this_thread(int nice) {
    // On Linux, PRIO_PROCESS with a thread id sets that thread's nice value alone.
    return setpriority(PRIO_PROCESS, (id_t)gettid(), nice);
}
