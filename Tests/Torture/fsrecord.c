// Records the file-system calls of fetchd that change its data, for Tests/Torture/crash_states.py
// (loaded with LD_PRELOAD). Every call on a path under the folders in FSRECORD_PREFIXES
// (colon-separated: the cache and the state folder) that changes what a power loss could leave
// is appended to FSRECORD_LOG, one line each, in the order the calls completed (they are made one
// at a time while recording): the data of every write, so the calls can be replayed; and what
// fetchd wrote to stderr (its log, where a result is acknowledged), so the replay knows what had
// been acknowledged at each point. Fields are tab-separated; data and text in hex.
//
//   C path            a file created (open with O_CREAT of a missing file)
//   W path offset hex bytes written at offset (write, writev, pwrite)
//   T path length     a file truncated (ftruncate, open with O_TRUNC)
//   D path            a folder made          X path       a folder removed
//   S target path     a symbolic link made   U path       a name unlinked
//   R from to         a rename
//   F path            fsync or fdatasync     Y            syncfs
//   A hex             a line fetchd logged (stderr)
//
// Only calls made through the dynamic symbols are seen: a file glibc creates itself (mkstemp) or
// a program fetchd starts (it gets a clean environment, without LD_PRELOAD) goes unrecorded, so
// the crash-state wake uses http handlers, whose every byte fetchd writes. errno is kept as the
// real call left it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim_paths.h"

static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int record_fd = -1;
static ssize_t (*record_write)(int, const void *, size_t);
// The call's lines, gathered in memory between begin() and end() and appended to the log with
// one write: a line never reaches the file in pieces, whoever else writes it.
static FILE *record;
static char *lines;
static size_t lines_length;
static int depth;

__attribute__((constructor)) static void fsrecord_init(void) {
    shim_read_prefixes("FSRECORD_PREFIXES");
    const char *path = getenv("FSRECORD_LOG");
    int (*real_open)(const char *, int, ...) = dlsym(RTLD_NEXT, "open");
    record_write = dlsym(RTLD_NEXT, "write");
    record_fd = path ? real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;
}

#define REAL(type, name, ...) static type (*real)(__VA_ARGS__); if (!real) real = dlsym(RTLD_NEXT, #name)

static void hex(const void *data, size_t count) {
    const unsigned char *bytes = data;
    for (size_t i = 0; i < count; i++) fprintf(record, "%02x", bytes[i]);
}

// The calls are made one at a time, so the record's order is the order they completed in.
static void begin(void) {
    pthread_mutex_lock(&lock);
    if (depth++ == 0 && record_fd >= 0) record = open_memstream(&lines, &lines_length);
}

static void end(void) {
    int error = errno;
    if (--depth == 0 && record) {
        fclose(record);
        record = NULL;
        for (size_t done = 0; done < lines_length;) {
            ssize_t count = record_write(record_fd, lines + done, lines_length - done);
            if (count <= 0 && errno != EINTR) break;
            if (count > 0) done += (size_t)count;
        }
        free(lines);
        lines = NULL;
        lines_length = 0;
    }
    pthread_mutex_unlock(&lock);
    errno = error;
}

static const char *fd_path(int fd, char *buffer) {
    const char *path = shim_path_of_fd(fd, buffer);
    return record && shim_under_prefix(path) ? path : NULL;
}

static const char *at_path(int dirfd, const char *path, char *buffer) {
    const char *resolved = shim_resolve(dirfd, path, buffer);
    return record && shim_under_prefix(resolved) ? resolved : NULL;
}

static void wrote(int fd, off_t offset, const void *data, ssize_t count) {
    char buffer[PATH_MAX];
    const char *path = fd_path(fd, buffer);
    if (!path || count <= 0) return;
    fprintf(record, "W\t%s\t%lld\t", path, (long long)offset);
    hex(data, (size_t)count);
    fputc('\n', record);
}

// Where a write() on `fd` lands: the end for O_APPEND, else the current offset.
static off_t write_offset(int fd) {
    if (fcntl(fd, F_GETFL) & O_APPEND) {
        struct stat info;
        return fstat(fd, &info) == 0 ? info.st_size : 0;
    }
    return lseek(fd, 0, SEEK_CUR);
}

// Records a write that returned `done` (errno as it left it), and ends the call.
static ssize_t written(ssize_t done, int fd, off_t offset, const void *data) {
    int error = errno;
    wrote(fd, offset, data, done);
    end();
    errno = error;
    return done;
}

ssize_t write(int fd, const void *data, size_t count) {
    REAL(ssize_t, write, int, const void *, size_t);
    begin();
    off_t offset = write_offset(fd);
    return written(real(fd, data, count), fd, offset, data);
}

ssize_t writev(int fd, const struct iovec *iov, int count) {
    REAL(ssize_t, writev, int, const struct iovec *, int);
    begin();
    off_t offset = write_offset(fd);
    ssize_t done = real(fd, iov, count), left = done;
    int error = errno;
    for (int i = 0; i < count && left > 0; i++) {
        ssize_t part = (size_t)left < iov[i].iov_len ? left : (ssize_t)iov[i].iov_len;
        wrote(fd, offset, iov[i].iov_base, part);
        offset += part;
        left -= part;
    }
    end();
    errno = error;
    return done;
}

ssize_t pwrite(int fd, const void *data, size_t count, off_t offset) {
    REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
    begin();
    return written(real(fd, data, count, offset), fd, offset, data);
}

ssize_t pwrite64(int fd, const void *data, size_t count, off64_t offset) {
    REAL(ssize_t, pwrite64, int, const void *, size_t, off64_t);
    begin();
    return written(real(fd, data, count, offset), fd, offset, data);
}

static int truncated(int fd, off_t length, int result) {
    int error = errno;  // the real call's, for its caller
    char buffer[PATH_MAX];
    const char *path = fd_path(fd, buffer);
    if (path && result == 0) fprintf(record, "T\t%s\t%lld\n", path, (long long)length);
    errno = error;
    return result;
}

int ftruncate(int fd, off_t length) {
    REAL(int, ftruncate, int, off_t);
    begin();
    int result = truncated(fd, length, real(fd, length));
    end();
    return result;
}

int ftruncate64(int fd, off64_t length) {
    REAL(int, ftruncate64, int, off64_t);
    begin();
    int result = truncated(fd, length, real(fd, length));
    end();
    return result;
}

static int synced(int fd, int result, int whole) {
    int error = errno;  // the real call's, for its caller
    char buffer[PATH_MAX];
    const char *path = fd_path(fd, buffer);
    if (path && result == 0) {
        if (whole) fprintf(record, "Y\n");
        else fprintf(record, "F\t%s\n", path);
    }
    errno = error;
    return result;
}

int fsync(int fd) { REAL(int, fsync, int); begin(); int r = synced(fd, real(fd), 0); end(); return r; }
int fdatasync(int fd) { REAL(int, fdatasync, int); begin(); int r = synced(fd, real(fd), 0); end(); return r; }
int syncfs(int fd) { REAL(int, syncfs, int); begin(); int r = synced(fd, real(fd), 1); end(); return r; }

// A call on one path: `code` and the path recorded when it succeeded.
static int one_path(const char *code, int dirfd, const char *path, int result) {
    int error = errno;  // the real call's, for its caller
    char buffer[RESOLVED_MAX];
    const char *resolved = at_path(dirfd, path, buffer);
    if (resolved && result == 0) fprintf(record, "%s\t%s\n", code, resolved);
    errno = error;
    return result;
}

int mkdir(const char *path, mode_t mode) {
    REAL(int, mkdir, const char *, mode_t);
    begin(); int r = one_path("D", AT_FDCWD, path, real(path, mode)); end(); return r;
}
int mkdirat(int dirfd, const char *path, mode_t mode) {
    REAL(int, mkdirat, int, const char *, mode_t);
    begin(); int r = one_path("D", dirfd, path, real(dirfd, path, mode)); end(); return r;
}
int rmdir(const char *path) {
    REAL(int, rmdir, const char *);
    begin(); int r = one_path("X", AT_FDCWD, path, real(path)); end(); return r;
}
int unlink(const char *path) {
    REAL(int, unlink, const char *);
    begin(); int r = one_path("U", AT_FDCWD, path, real(path)); end(); return r;
}
int unlinkat(int dirfd, const char *path, int flags) {
    REAL(int, unlinkat, int, const char *, int);
    begin(); int r = one_path(flags & AT_REMOVEDIR ? "X" : "U", dirfd, path, real(dirfd, path, flags)); end(); return r;
}

static int linked(const char *target, int dirfd, const char *path, int result) {
    int error = errno;  // the real call's, for its caller
    char buffer[RESOLVED_MAX];
    const char *resolved = at_path(dirfd, path, buffer);
    if (resolved && result == 0) fprintf(record, "S\t%s\t%s\n", target, resolved);
    errno = error;
    return result;
}
int symlink(const char *target, const char *path) {
    REAL(int, symlink, const char *, const char *);
    begin(); int r = linked(target, AT_FDCWD, path, real(target, path)); end(); return r;
}
int symlinkat(const char *target, int dirfd, const char *path) {
    REAL(int, symlinkat, const char *, int, const char *);
    begin(); int r = linked(target, dirfd, path, real(target, dirfd, path)); end(); return r;
}

static int renamed(int fromfd, const char *from, int tofd, const char *to, int result) {
    int error = errno;  // the real call's, for its caller
    char a[RESOLVED_MAX], b[RESOLVED_MAX];
    const char *source = at_path(fromfd, from, a), *target = at_path(tofd, to, b);
    if (source && target && result == 0) fprintf(record, "R\t%s\t%s\n", source, target);
    errno = error;
    return result;
}
int rename(const char *from, const char *to) {
    REAL(int, rename, const char *, const char *);
    begin(); int r = renamed(AT_FDCWD, from, AT_FDCWD, to, real(from, to)); end(); return r;
}
int renameat(int fromfd, const char *from, int tofd, const char *to) {
    REAL(int, renameat, int, const char *, int, const char *);
    begin(); int r = renamed(fromfd, from, tofd, to, real(fromfd, from, tofd, to)); end(); return r;
}
int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
    REAL(int, renameat2, int, const char *, int, const char *, unsigned int);
    begin(); int r = renamed(fromfd, from, tofd, to, real(fromfd, from, tofd, to, flags)); end(); return r;
}

// The open family: a file created, or truncated by O_TRUNC.
static int opened(int dirfd, const char *path, int flags, int existed, int fd) {
    int error = errno;  // the real call's, for its caller
    char buffer[RESOLVED_MAX];
    const char *resolved = at_path(dirfd, path, buffer);
    if (resolved && fd >= 0) {
        if ((flags & O_CREAT) && !existed) fprintf(record, "C\t%s\n", resolved);
        else if (flags & O_TRUNC) fprintf(record, "T\t%s\t0\n", resolved);
    }
    errno = error;
    return fd;
}

static mode_t mode_argument(int flags, va_list arguments) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(arguments, int) : 0;
}

#define OPENAT(name, dirfd_expression, ...)                                                     \
    {                                                                                           \
        REAL(int, name, __VA_ARGS__);                                                           \
        va_list arguments;                                                                      \
        va_start(arguments, flags);                                                             \
        mode_t mode = mode_argument(flags, arguments);                                          \
        va_end(arguments);                                                                      \
        begin();                                                                                \
        int existed = faccessat(dirfd_expression, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;        \
        int fd = opened(dirfd_expression, path, flags, existed, CALL);                          \
        int error = errno;                                                                      \
        end();                                                                                  \
        errno = error;                                                                          \
        return fd;                                                                              \
    }
#define CALL real(path, flags, mode)
int open(const char *path, int flags, ...) OPENAT(open, AT_FDCWD, const char *, int, ...)
int open64(const char *path, int flags, ...) OPENAT(open64, AT_FDCWD, const char *, int, ...)
#undef CALL
#define CALL real(dirfd, path, flags, mode)
int openat(int dirfd, const char *path, int flags, ...) OPENAT(openat, dirfd, int, const char *, int, ...)
int openat64(int dirfd, const char *path, int flags, ...) OPENAT(openat64, dirfd, int, const char *, int, ...)
#undef CALL

int __open_2(const char *path, int flags) { return open(path, flags); }
int __open64_2(const char *path, int flags) { return open64(path, flags); }
int __openat_2(int dirfd, const char *path, int flags) { return openat(dirfd, path, flags); }
int __openat64_2(int dirfd, const char *path, int flags) { return openat64(dirfd, path, flags); }

// fetchd's log (swift-log writes stderr with fwrite): where results are acknowledged.
size_t fwrite(const void *data, size_t size, size_t count, FILE *stream) {
    REAL(size_t, fwrite, const void *, size_t, size_t, FILE *);
    if (stream != stderr || record_fd < 0) return real(data, size, count, stream);
    begin();
    size_t done = real(data, size, count, stream);
    int error = errno;
    fputs("A\t", record);
    hex(data, size * done);
    fputc('\n', record);
    end();
    errno = error;
    return done;
}
