/*
 * snapshot_floor: what the file-system work and the durable result row of one fetch cost, with
 * nothing else around them.
 *
 * bench/http_bench.py compiles and runs this in the folder the benchmark writes to, in the same
 * run as fetchd and curl. It repeats, N times, exactly the file-system calls of one fetch (those
 * `strace -f -c` counts on `fetchd --once`), from C, with no HTTP and no Swift, and for fetchd's
 * modes the result row fetchd records for it:
 *
 *   curl     curl's part: create the output file, write 1 KiB, close. No row: curl keeps none.
 *   fresh    fetchd's first version of a handler: mkdir the staging folder, create `content`
 *            (1 KiB) and `meta.json` (700 bytes) in it, mkdir the handler's folder and its
 *            `versions`, rename the staging folder to versions/1, symlink `latest` to it; then
 *            the row (below) of a new handler.
 *   later    a later version (the folders, and the handler's rows, exist): the same without the
 *            two mkdirs, the `latest` link replaced atomically (symlink beside it, renamed over
 *            it), and the row updating the handler's state.
 *   row      fresh's rows alone, no file calls: the row's own cost.
 *
 * The row is what StateStore.record writes per result, with the same statements, prepared once
 * and reused: an INSERT into fetch_history (WITHOUT ROWID, its index by start time), the upsert
 * of handler_state, and the trim of the handler's history beyond 1,000 rows, which fetchd runs
 * on every insert (so it is here too, though it deletes nothing in these runs). The database is
 * fetchd's kind, in FOLDER (the same file system): WAL, synchronous=FULL, so each commit syncs
 * the WAL. Rows are committed FETCHD_COMMIT_BATCH at a time, the batch fetchd's commit queue
 * aims for, and the remainder at the end; each transaction also reads and sets the id sequence,
 * as fetchd's does. The commit queue's two syncfs per batch are left out: they flush the
 * snapshots' files, not the row, and no mode here counts flushes.
 *
 * fetchd's CPU per fetch can never be lower than curl's plus (fresh - curl): that difference is
 * the price of atomic, versioned snapshots with metadata and a durable record of each result,
 * which curl does not pay. The numbers are the process's CPU time (user + system) per item, in
 * microseconds; setting up (the database, later's existing folders and rows) is not counted.
 *
 * Usage: snapshot_floor FOLDER N MODE   (MODE: curl, fresh, later or row; FOLDER must be empty)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
// The batch size, from the header fetchd itself reads, so the two cannot disagree.
#include "../Sources/CPosixShim/include/fetchd_commit.h"

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

// fetchd's state tables as its migrations leave them (StateStore+Schema.swift), the columns
// that record() touches; GRDB's `.datetime` is DATETIME.
static const char schema[] =
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
    "CREATE TABLE handler_state (name TEXT PRIMARY KEY NOT NULL, last_attempt_at DATETIME,"
    " last_success_at DATETIME, last_result TEXT, last_reason TEXT,"
    " consecutive_failures INTEGER NOT NULL DEFAULT 0, etag TEXT, last_modified TEXT,"
    " new_data_unseen INTEGER NOT NULL DEFAULT 0, not_before DATETIME);"
    "CREATE TABLE fetch_history (handler TEXT NOT NULL, id INTEGER NOT NULL,"
    " started_at DATETIME NOT NULL, finished_at DATETIME NOT NULL, duration_ms INTEGER NOT NULL,"
    " result TEXT NOT NULL, reason TEXT, \"trigger\" TEXT NOT NULL, bytes INTEGER, sha256 TEXT,"
    " version TEXT, PRIMARY KEY (handler, id)) WITHOUT ROWID;"
    "CREATE INDEX fetch_history_by_start ON fetch_history (handler, started_at);"
    "CREATE TABLE fetch_history_sequence (last_id INTEGER NOT NULL);"
    "INSERT INTO fetch_history_sequence (last_id) VALUES (0);";

// StateStore.InsertStatements, word for word.
static const char *const statement_sql[] = {
    "SELECT last_id FROM fetch_history_sequence",
    "UPDATE fetch_history_sequence SET last_id = ?",
    "INSERT INTO fetch_history (handler, id, started_at, finished_at, duration_ms, result, reason,"
    " trigger, bytes, sha256, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "INSERT INTO handler_state (name, last_attempt_at, last_success_at, last_result, last_reason,"
    " consecutive_failures, etag, last_modified, new_data_unseen, not_before)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT(name) DO UPDATE SET"
    " last_attempt_at = excluded.last_attempt_at,"
    " last_success_at = COALESCE(excluded.last_success_at, last_success_at),"
    " last_result = excluded.last_result, last_reason = excluded.last_reason,"
    " consecutive_failures = CASE WHEN ?6 THEN consecutive_failures + 1 ELSE 0 END,"
    " etag = CASE WHEN ?11 THEN excluded.etag ELSE etag END,"
    " last_modified = CASE WHEN ?11 THEN excluded.last_modified ELSE last_modified END,"
    " new_data_unseen = new_data_unseen + excluded.new_data_unseen, not_before = excluded.not_before",
    "DELETE FROM fetch_history WHERE handler = ? AND id <= ("
    " SELECT id FROM fetch_history WHERE handler = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
};
enum { LAST_ID, SET_LAST_ID, HISTORY, STATE, TRIM, STATEMENTS };

struct rows {
    sqlite3 *db;
    sqlite3_stmt *statement[STATEMENTS];
    sqlite3_int64 last_id;
    int pending;  // rows written in the open transaction
};

static void check(struct rows *rows, int code, int expected, const char *what) {
    if (code == expected) return;
    fprintf(stderr, "snapshot_floor: %s: %s\n", what, sqlite3_errmsg(rows->db));
    exit(1);
}

static void run(struct rows *rows, int which) {
    sqlite3_stmt *statement = rows->statement[which];
    int code;
    while ((code = sqlite3_step(statement)) == SQLITE_ROW) {
        if (which == LAST_ID) rows->last_id = sqlite3_column_int64(statement, 0);
    }
    check(rows, code, SQLITE_DONE, statement_sql[which]);
    sqlite3_reset(statement);
}

static void open_rows(struct rows *rows, const char *root) {
    char path[4096];
    snprintf(path, sizeof path, "%s/state.sqlite", root);
    check(rows, sqlite3_open(path, &rows->db), SQLITE_OK, "open");
    check(rows, sqlite3_exec(rows->db, schema, NULL, NULL, NULL), SQLITE_OK, "schema");
    for (int which = 0; which < STATEMENTS; which++)
        check(rows, sqlite3_prepare_v3(rows->db, statement_sql[which], -1, SQLITE_PREPARE_PERSISTENT,
                                       &rows->statement[which], NULL), SQLITE_OK, statement_sql[which]);
}

// A time as fetchd stores it (StoredDate: `2026-11-21 08:30:12.345`, UTC) and as its version
// names carry it (`20261121T083012Z`).
static void utc_text(char *stored, size_t stored_size, char *compact, size_t compact_size) {
    struct timespec now;
    struct tm utc;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &utc);
    size_t length = strftime(stored, stored_size, "%Y-%m-%d %H:%M:%S", &utc);
    snprintf(stored + length, stored_size - length, ".%03ld", now.tv_nsec / 1000000);
    strftime(compact, compact_size, "%Y%m%dT%H%M%SZ", &utc);
}

static void bind_text(struct rows *rows, sqlite3_stmt *statement, int index, const char *text) {
    check(rows, sqlite3_bind_text(statement, index, text, -1, SQLITE_TRANSIENT), SQLITE_OK, "bind");
}

// Commits the open transaction (a full batch, or the last, partial one), the sequence moved on.
static void commit(struct rows *rows) {
    if (rows->pending == 0) return;
    sqlite3_bind_int64(rows->statement[SET_LAST_ID], 1, rows->last_id);
    run(rows, SET_LAST_ID);
    check(rows, sqlite3_exec(rows->db, "COMMIT", NULL, NULL, NULL), SQLITE_OK, "commit");
    rows->pending = 0;
}

// One result of handler `item`, new data, as fetchd records it; the transaction opened and
// committed around every FETCHD_COMMIT_BATCH of them.
static void record(struct rows *rows, int item) {
    if (rows->pending == 0) {
        check(rows, sqlite3_exec(rows->db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK, "begin");
        run(rows, LAST_ID);
    }
    char handler[16], started[32], compact[32], version[64], sha256[65];
    snprintf(handler, sizeof handler, "h%05d", item);
    utc_text(started, sizeof started, compact, sizeof compact);
    sqlite3_int64 id = ++rows->last_id;
    snprintf(version, sizeof version, "%08lld-%s", (long long)id, compact);
    unsigned long long hash = (unsigned long long)id;
    for (int part = 0; part < 4; part++) {  // 64 hex digits that differ from row to row
        hash = hash * 6364136223846793005ULL + 1442695040888963407ULL;
        snprintf(sha256 + 16 * part, 17, "%016llx", hash);
    }
    sqlite3_stmt *history = rows->statement[HISTORY], *state = rows->statement[STATE];
    bind_text(rows, history, 1, handler);
    sqlite3_bind_int64(history, 2, id);
    bind_text(rows, history, 3, started);
    bind_text(rows, history, 4, started);
    sqlite3_bind_int(history, 5, 2);
    bind_text(rows, history, 6, "newData");
    sqlite3_bind_null(history, 7);
    bind_text(rows, history, 8, "timer");
    sqlite3_bind_int(history, 9, 1024);
    bind_text(rows, history, 10, sha256);
    bind_text(rows, history, 11, version);
    run(rows, HISTORY);
    bind_text(rows, state, 1, handler);
    bind_text(rows, state, 2, started);
    bind_text(rows, state, 3, started);
    bind_text(rows, state, 4, "newData");
    sqlite3_bind_null(state, 5);
    sqlite3_bind_int(state, 6, 0);
    bind_text(rows, state, 7, "\"6565a1b2-400\"");  // nginx's validators
    bind_text(rows, state, 8, "Sat, 28 Nov 2026 13:00:00 GMT");
    sqlite3_bind_int(state, 9, 1);
    sqlite3_bind_null(state, 10);
    sqlite3_bind_int(state, 11, 1);
    run(rows, STATE);
    sqlite3_stmt *trim = rows->statement[TRIM];
    bind_text(rows, trim, 1, handler);
    bind_text(rows, trim, 2, handler);
    sqlite3_bind_int(trim, 3, 1000);
    run(rows, TRIM);
    if (++rows->pending == FETCHD_COMMIT_BATCH) commit(rows);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: snapshot_floor FOLDER N curl|fresh|later|row\n");
        return 2;
    }
    const char *root = argv[1], *mode = argv[3];
    int count = atoi(argv[2]);
    int curl = strcmp(mode, "curl") == 0, fresh = strcmp(mode, "fresh") == 0;
    int later = strcmp(mode, "later") == 0, row_only = strcmp(mode, "row") == 0;
    if (count <= 0 || !(curl || fresh || later || row_only)) {
        fprintf(stderr, "snapshot_floor: N must be positive and MODE curl, fresh, later or row\n");
        return 2;
    }
    static char body[1024], meta[700];
    memset(body, 'b', sizeof body);
    memset(meta, 'm', sizeof meta);
    char staged[4096], path[4096], link[4096];
    snprintf(path, sizeof path, "%s/.staging", root);
    make_folder(path);
    struct rows rows = {0};
    if (!curl) open_rows(&rows, root);
    // A later version finds its handler's folders, a `latest` link and its rows in place (not timed).
    for (int item = 0; later && item < count; item++) {
        snprintf(path, sizeof path, "%s/h%05d", root, item);
        make_folder(path);
        snprintf(path, sizeof path, "%s/h%05d/versions", root, item);
        make_folder(path);
        snprintf(path, sizeof path, "%s/h%05d/latest", root, item);
        if (symlink("versions/0", path) != 0) fail("symlink", path);
        record(&rows, item);
    }
    if (later) commit(&rows);
    double start = cpu_seconds();
    for (int item = 0; item < count; item++) {
        if (curl) {
            snprintf(path, sizeof path, "%s/%05d", root, item);
            write_file(path, body, sizeof body);
            continue;
        }
        if (row_only) {
            record(&rows, item);
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
        record(&rows, item);
    }
    if (!curl) commit(&rows);
    printf("%.2f\n", (cpu_seconds() - start) * 1e6 / count);
    return 0;
}
