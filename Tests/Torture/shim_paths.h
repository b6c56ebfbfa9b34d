// Paths for the LD_PRELOAD shims of Tests/Torture (iofault.c, fsrecord.c): which calls touch
// fetchd's data (a path under one of the folders in an environment variable) and the absolute
// path a call names (relative to a directory descriptor, or a descriptor's own file).
#ifndef SHIM_PATHS_H
#define SHIM_PATHS_H
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The absolute path of a call, in a buffer of RESOLVED_MAX bytes.
#define RESOLVED_MAX (2 * PATH_MAX + 2)

static char shim_prefixes[8][PATH_MAX];
static int shim_prefix_count;

// Reads the colon-separated folders of `variable`.
static void shim_read_prefixes(const char *variable) {
    const char *list = getenv(variable);
    for (const char *p = list; p && *p && shim_prefix_count < 8;) {
        const char *end = strchr(p, ':');
        size_t length = end ? (size_t)(end - p) : strlen(p);
        if (length > 0 && length < PATH_MAX) {
            memcpy(shim_prefixes[shim_prefix_count], p, length);
            shim_prefixes[shim_prefix_count++][length] = 0;
        }
        p = end ? end + 1 : p + length;
    }
}

// Whether `path` is one of the folders or under one.
static int shim_under_prefix(const char *path) {
    if (!path) return 0;
    for (int i = 0; i < shim_prefix_count; i++) {
        size_t length = strlen(shim_prefixes[i]);
        if (strncmp(path, shim_prefixes[i], length) == 0 && (path[length] == 0 || path[length] == '/')) return 1;
    }
    return 0;
}

// The absolute path of `path` relative to `dirfd` (AT_FDCWD: the working folder), in `buffer`.
static const char *shim_resolve(int dirfd, const char *path, char *buffer) {
    if (!path) return NULL;
    if (path[0] == '/') return path;
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base)) return NULL;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, base, sizeof base - 1);
        if (n <= 0) return NULL;
        base[n] = 0;
    }
    snprintf(buffer, RESOLVED_MAX, "%s/%s", base, path);
    return buffer;
}

// The path of the file `fd` is open on, in `buffer` (PATH_MAX bytes); NULL for a pipe or socket
// (whose "path" names no file under a folder).
static const char *shim_path_of_fd(int fd, char *buffer) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buffer, PATH_MAX - 1);
    if (n <= 0) return NULL;
    buffer[n] = 0;
    return buffer;
}
#endif
