#define _GNU_SOURCE
#include <unistd.h>
#include "CPosixShim.h"

int fetchd_syncfs(int fd) {
    return syncfs(fd);
}
