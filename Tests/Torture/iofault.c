// I/O fault injection for fetchd (Tests/Torture/io_fault_torture.py), loaded with LD_PRELOAD.
//
// Counts the calls that open or change fetchd's data (write, writev, pwrite, ftruncate, fsync,
// fdatasync, syncfs, rename, renameat, renameat2, mkdir, mkdirat, rmdir, unlink, unlinkat,
// symlink, symlinkat, open, openat and their 64-bit and fortified names; opens for reading
// too) on paths under the folders in IOFAULT_PREFIXES (colon-separated:
// the cache and the state folder; a descriptor counts by the path /proc/self/fd names), and
// fails the IOFAULT_CALL-th of them with IOFAULT_ERRNO (EIO, ENOSPC or EDQUOT) without making it.
// IOFAULT_CALL=0 fails none: the run only counts. Every counted call is appended to IOFAULT_LOG
// as "N name path", the failed one as "FAIL N name path errno", so the driver knows how many
// points a wake has and which call each one is.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim_paths.h"

static long fail_at;
static int fail_errno = EIO;
static int log_fd = -1;
static long calls;

static ssize_t (*real_write)(int, const void *, size_t);

__attribute__((constructor)) static void iofault_init(void) {
    real_write = dlsym(RTLD_NEXT, "write");
    shim_read_prefixes("IOFAULT_PREFIXES");
    const char *call = getenv("IOFAULT_CALL");
    fail_at = call ? atol(call) : 0;
    const char *name = getenv("IOFAULT_ERRNO");
    if (name && strcmp(name, "ENOSPC") == 0) fail_errno = ENOSPC;
    if (name && strcmp(name, "EDQUOT") == 0) fail_errno = EDQUOT;
    const char *log = getenv("IOFAULT_LOG");
    int (*real_open)(const char *, int, ...) = dlsym(RTLD_NEXT, "open");
    if (log) log_fd = real_open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

// Counts a call on `path` when it is one of ours; true when this one must fail.
static int should_fail(const char *name, const char *path) {
    if (!shim_under_prefix(path)) return 0;
    long n = __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST);
    int failing = fail_at > 0 && n == fail_at;
    if (log_fd >= 0 && real_write) {
        char line[RESOLVED_MAX + 128];
        int length = failing ? snprintf(line, sizeof line, "FAIL %ld %s %s %s\n", n, name, path, strerrorname_np(fail_errno))
                             : snprintf(line, sizeof line, "%ld %s %s\n", n, name, path);
        if (length > 0) real_write(log_fd, line, (size_t)length < sizeof line ? (size_t)length : sizeof line - 1);
    }
    if (failing) errno = fail_errno;
    return failing;
}

#define REAL(type, name, ...) static type (*real)(__VA_ARGS__); if (!real) real = dlsym(RTLD_NEXT, #name)

static int fd_fails(const char *name, int fd) {
    char buffer[PATH_MAX];
    return should_fail(name, shim_path_of_fd(fd, buffer));
}

static int path_fails(const char *name, int dirfd, const char *path) {
    char buffer[RESOLVED_MAX];
    return should_fail(name, shim_resolve(dirfd, path, buffer));
}

ssize_t write(int fd, const void *data, size_t count) {
    if (!real_write) real_write = dlsym(RTLD_NEXT, "write");
    if (fd != log_fd && fd > 2 && fd_fails("write", fd)) return -1;
    return real_write(fd, data, count);
}

ssize_t writev(int fd, const struct iovec *iov, int count) {
    REAL(ssize_t, writev, int, const struct iovec *, int);
    if (fd > 2 && fd_fails("writev", fd)) return -1;
    return real(fd, iov, count);
}

ssize_t pwrite(int fd, const void *data, size_t count, off_t offset) {
    REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
    if (fd_fails("pwrite", fd)) return -1;
    return real(fd, data, count, offset);
}

ssize_t pwrite64(int fd, const void *data, size_t count, off64_t offset) {
    REAL(ssize_t, pwrite64, int, const void *, size_t, off64_t);
    if (fd_fails("pwrite64", fd)) return -1;
    return real(fd, data, count, offset);
}

int fsync(int fd) {
    REAL(int, fsync, int);
    if (fd_fails("fsync", fd)) return -1;
    return real(fd);
}

int fdatasync(int fd) {
    REAL(int, fdatasync, int);
    if (fd_fails("fdatasync", fd)) return -1;
    return real(fd);
}

int syncfs(int fd) {
    REAL(int, syncfs, int);
    if (fd_fails("syncfs", fd)) return -1;
    return real(fd);
}

int rename(const char *from, const char *to) {
    REAL(int, rename, const char *, const char *);
    if (path_fails("rename", AT_FDCWD, to)) return -1;
    return real(from, to);
}

int renameat(int fromfd, const char *from, int tofd, const char *to) {
    REAL(int, renameat, int, const char *, int, const char *);
    if (path_fails("renameat", tofd, to)) return -1;
    return real(fromfd, from, tofd, to);
}

int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
    REAL(int, renameat2, int, const char *, int, const char *, unsigned int);
    if (path_fails("renameat2", tofd, to)) return -1;
    return real(fromfd, from, tofd, to, flags);
}

int ftruncate(int fd, off_t length) {
    REAL(int, ftruncate, int, off_t);
    if (fd_fails("ftruncate", fd)) return -1;
    return real(fd, length);
}

int ftruncate64(int fd, off64_t length) {
    REAL(int, ftruncate64, int, off64_t);
    if (fd_fails("ftruncate64", fd)) return -1;
    return real(fd, length);
}

int unlink(const char *path) {
    REAL(int, unlink, const char *);
    if (path_fails("unlink", AT_FDCWD, path)) return -1;
    return real(path);
}

int unlinkat(int dirfd, const char *path, int flags) {
    REAL(int, unlinkat, int, const char *, int);
    if (path_fails("unlinkat", dirfd, path)) return -1;
    return real(dirfd, path, flags);
}

int rmdir(const char *path) {
    REAL(int, rmdir, const char *);
    if (path_fails("rmdir", AT_FDCWD, path)) return -1;
    return real(path);
}

int mkdir(const char *path, mode_t mode) {
    REAL(int, mkdir, const char *, mode_t);
    if (path_fails("mkdir", AT_FDCWD, path)) return -1;
    return real(path, mode);
}

int mkdirat(int dirfd, const char *path, mode_t mode) {
    REAL(int, mkdirat, int, const char *, mode_t);
    if (path_fails("mkdirat", dirfd, path)) return -1;
    return real(dirfd, path, mode);
}

int symlink(const char *target, const char *path) {
    REAL(int, symlink, const char *, const char *);
    if (path_fails("symlink", AT_FDCWD, path)) return -1;
    return real(target, path);
}

int symlinkat(const char *target, int dirfd, const char *path) {
    REAL(int, symlinkat, const char *, int, const char *);
    if (path_fails("symlinkat", dirfd, path)) return -1;
    return real(target, dirfd, path);
}

// The open family takes a mode only with O_CREAT or O_TMPFILE.
static mode_t mode_argument(int flags, va_list arguments) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(arguments, int) : 0;
}

#define OPEN(name)                                                                  \
    int name(const char *path, int flags, ...) {                                    \
        REAL(int, name, const char *, int, ...);                                    \
        va_list arguments;                                                          \
        va_start(arguments, flags);                                                 \
        mode_t mode = mode_argument(flags, arguments);                              \
        va_end(arguments);                                                          \
        if (path_fails(#name, AT_FDCWD, path)) return -1;                           \
        return real(path, flags, mode);                                             \
    }
#define OPENAT(name)                                                                \
    int name(int dirfd, const char *path, int flags, ...) {                         \
        REAL(int, name, int, const char *, int, ...);                               \
        va_list arguments;                                                          \
        va_start(arguments, flags);                                                 \
        mode_t mode = mode_argument(flags, arguments);                              \
        va_end(arguments);                                                          \
        if (path_fails(#name, dirfd, path)) return -1;                              \
        return real(dirfd, path, flags, mode);                                      \
    }
OPEN(open)
OPEN(open64)
OPENAT(openat)
OPENAT(openat64)

int __open_2(const char *path, int flags) { return open(path, flags); }
int __open64_2(const char *path, int flags) { return open64(path, flags); }
int __openat_2(int dirfd, const char *path, int flags) { return openat(dirfd, path, flags); }
int __openat64_2(int dirfd, const char *path, int flags) { return openat64(dirfd, path, flags); }
