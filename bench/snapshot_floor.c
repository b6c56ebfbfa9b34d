/*
 * snapshot_floor: what the file-system work of one fetch costs, with nothing else around it.
 *
 * bench/http_bench.py compiles and runs this in the folder the benchmark writes to, in the same
 * run as fetchd and curl. It repeats, N times, exactly the file-system calls of one fetch (those
 * `strace -f -c` counts on `fetchd --once`), from C, with no HTTP, no database and no Swift:
 *
 *   curl     curl's part: create the output file, write 1 KiB, close.
 *   fresh    fetchd's first version of a handler: mkdir the staging folder, create `content`
 *            (1 KiB) and `meta.json` (700 bytes) in it, mkdir the handler's folder and its
 *            `versions`, rename the staging folder to versions/1, symlink `latest` to it.
 *   later    a later version (the folders exist): the same without the two mkdirs, and the
 *            `latest` link replaced atomically (symlink beside it, renamed over it).
 *
 * fetchd's CPU per fetch can never be lower than curl's plus (fresh - curl): that difference is
 * the price of atomic, versioned snapshots with metadata, which curl does not pay. The numbers
 * are the process's CPU time (user + system) per item, in microseconds.
 *
 * Usage: snapshot_floor FOLDER N MODE   (MODE: curl, fresh or later; FOLDER must be empty)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

static void fail(const char *what, const char *path) {
    perror(path);
    fprintf(stderr, "snapshot_floor: %s failed\n", what);
    exit(1);
}

static void write_file(const char *path, const char *bytes, size_t count) {
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail("open", path);
    if (write(fd, bytes, count) != (ssize_t)count) fail("write", path);
    if (close(fd) != 0) fail("close", path);
}

static void make_folder(const char *path) {
    if (mkdir(path, 0755) != 0) fail("mkdir", path);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: snapshot_floor FOLDER N curl|fresh|later\n");
        return 2;
    }
    const char *root = argv[1], *mode = argv[3];
    int count = atoi(argv[2]);
    int curl = strcmp(mode, "curl") == 0, fresh = strcmp(mode, "fresh") == 0, later = strcmp(mode, "later") == 0;
    if (count <= 0 || !(curl || fresh || later)) {
        fprintf(stderr, "snapshot_floor: N must be positive and MODE curl, fresh or later\n");
        return 2;
    }
    static char body[1024], meta[700];
    memset(body, 'b', sizeof body);
    memset(meta, 'm', sizeof meta);
    char staged[4096], path[4096], link[4096];
    snprintf(path, sizeof path, "%s/.staging", root);
    make_folder(path);
    // A later version finds its handler's folders and a `latest` link in place (not timed).
    for (int item = 0; later && item < count; item++) {
        snprintf(path, sizeof path, "%s/h%05d", root, item);
        make_folder(path);
        snprintf(path, sizeof path, "%s/h%05d/versions", root, item);
        make_folder(path);
        snprintf(path, sizeof path, "%s/h%05d/latest", root, item);
        if (symlink("versions/0", path) != 0) fail("symlink", path);
    }
    double start = cpu_seconds();
    for (int item = 0; item < count; item++) {
        if (curl) {
            snprintf(path, sizeof path, "%s/%05d", root, item);
            write_file(path, body, sizeof body);
            continue;
        }
        snprintf(staged, sizeof staged, "%s/.staging/h%05d.1", root, item);
        make_folder(staged);
        snprintf(path, sizeof path, "%s/content", staged);
        write_file(path, body, sizeof body);
        snprintf(path, sizeof path, "%s/meta.json", staged);
        write_file(path, meta, sizeof meta);
        if (fresh) {
            snprintf(path, sizeof path, "%s/h%05d", root, item);
            make_folder(path);
            snprintf(path, sizeof path, "%s/h%05d/versions", root, item);
            make_folder(path);
        }
        snprintf(path, sizeof path, "%s/h%05d/versions/1", root, item);
        if (rename(staged, path) != 0) fail("rename", staged);
        snprintf(path, sizeof path, "%s/h%05d/latest", root, item);
        if (fresh) {
            if (symlink("versions/1", path) != 0) fail("symlink", path);
        } else {
            snprintf(link, sizeof link, "%s/h%05d/.latest.new", root, item);
            if (symlink("versions/1", link) != 0) fail("symlink", link);
            if (rename(link, path) != 0) fail("rename", link);
        }
    }
    printf("%.2f\n", (cpu_seconds() - start) * 1e6 / count);
    return 0;
}
