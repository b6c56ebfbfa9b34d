"""The soak's database before the start (soak_torture.py): a long run's history replayed with
sqlite3, inserted and pruned as fetchd does, so that the run measures the steady state."""
import heapq, sqlite3, time
from collections import deque

# Defaults.historyKeepPerHandler: the history rows fetchd keeps per handler.
HISTORY_CAP = 1000


def db_text(unix_seconds, _seconds={}):
    """A date as fetchd stores it (UTC, milliseconds). The replay's rows come a dozen to the
    second: each second's text is made once."""
    whole = int(unix_seconds)
    if whole not in _seconds:
        if len(_seconds) > 4096:
            _seconds.clear()
        _seconds[whole] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(whole))
    return f"{_seconds[whole]}.{int(unix_seconds * 1000) % 1000:03d}"


# What a fetch of each kind records: result, reason, and whether it stores a snapshot (hash,
# version): the replayed rows are the size of the real ones.
REPLAYED = {
    "static": [("noData", None, False)], "cached": [("noData", None, False)], "redirect": [("noData", None, False)],
    "changing": [("newData", None, True), ("noData", None, False)], "gzip": [("newData", None, True), ("noData", None, True)],
    "explicit": [("newData", None, True)], "reads": [("newData", None, True)],
    "missing": [("failed", "HTTP 404", False)], "busy": [("failed", "HTTP 503", False)],
    "slow": [("expired", "deadline expired", False)], "overrun": [("expired", "deadline expired", False)],
    "hangup": [("failed", "incomplete response: Server returned nothing (no headers, no data)", False)],
    "refused": [("failed", "connect: Couldn't connect to server", False)],
    "failing": [("failed", "exited with status 3: soak: a failure on purpose", False)],
    "newdata": [("newData", None, True)], "previous": [("newData", None, True)], "pushed": [("newData", None, True)],
    "nodata": [("noData", None, False)],
}


def replay_interval(kind, seconds):
    """How often a handler of `kind` fetches, in seconds, as its config and its server make it:
    min_interval, raised by a server's floor (max-age 30 s, Retry-After 10 s), lowered by pushes
    (one every 10 s per pushed handler, within its push_limit). The usage-planned handlers, which
    have seen less than two days of use, keep to min_interval too: their plain interval (24 h /
    budget = 60 s) is taken up to 2 minutes early by the wakes."""
    floors = {"cached": 30, "busy": 10}
    return min(seconds, 10) if kind == "pushed" else max(seconds, floors.get(kind, 0))


def replay(kinds, intervals, rng, end, span):
    """Every handler's fetches from `end - span` (at least its last 1,000) to `end`, in time order."""
    def fetches(name, seconds):
        t = end - max(span, HISTORY_CAP * seconds) + rng.uniform(0, seconds)
        while t < end:
            yield t, name
            t += seconds
    return heapq.merge(*(fetches(name, replay_interval(kinds[name], seconds)) for name, seconds in intervals.items()))


def season(path, kinds, intervals, rng, cycles):
    """Brings the empty database to a long run's steady state. The schedule's fetches of
    `cycles` times the slowest handler's 1,000-row lifetime are inserted and pruned in order,
    as fetchd does (each insert beyond a handler's cap deletes its oldest row), so the file's pages
    are as full and as holed as a long run of this schedule leaves them; it ends a day before the
    start, so its fetches count in no budget. No uses: with two days of them the planner would
    place the usage-planned handlers' fetches by the time of day the run happens to start at, and
    the replay could not know their pace. With `cycles` 0, only each handler's last 1,000 fetches
    (the rows, not the holes that pruning leaves among them: the file then grows for a while as
    holes appear). Returns the last history id and the replayed fetches."""
    end = time.time() - 86_400
    span = cycles * HISTORY_CAP * max(replay_interval(kinds[n], s) for n, s in intervals.items())
    db = sqlite3.connect(path)
    # No journal and no syncs (a crash here only spoils a run), a cache that holds the whole
    # file; the WAL mode fetchd works in is put back at the end.
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA cache_size = -262144")
    live, next_id, replayed = {name: deque() for name in kinds}, 1, 0
    batch = []
    for t, name in replay(kinds, intervals, rng, end, span):
        result, reason, snapshot = rng.choice(REPLAYED[kinds[name]])
        batch.append((next_id, name, db_text(t), db_text(t + 0.04), 40, result, reason, "timer",
                      2048 if snapshot else None, "%064x" % rng.getrandbits(256) if snapshot else None,
                      f"{next_id:08d}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(t))}" if snapshot else None))
        live[name].append(next_id)
        if len(live[name]) > HISTORY_CAP:
            batch.append([name, live[name].popleft()])
        next_id, replayed = next_id + 1, replayed + 1
        if len(batch) >= 500:
            flush_replay(db, batch)
    flush_replay(db, batch)
    last_id = db.execute("SELECT max(id) FROM fetch_history").fetchone()[0]
    db.execute("UPDATE fetch_history_sequence SET last_id = ?", (last_id,))
    db.commit()
    db.execute("PRAGMA journal_mode = WAL")
    db.close()
    return last_id, replayed


def flush_replay(db, batch):
    """Runs a stretch of the replay: its inserts (tuples), then the prunes they caused (ids). A
    stretch is a few hundred fetches, about what one of fetchd's group commits writes at once.
    Prunes are [handler, id] lists: the table's key."""
    db.executemany("INSERT INTO fetch_history (id, handler, started_at, finished_at, duration_ms, result, reason, "
                   "trigger, bytes, sha256, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [item for item in batch if isinstance(item, tuple)])
    db.executemany("DELETE FROM fetch_history WHERE handler = ? AND id = ?",
                   [item for item in batch if not isinstance(item, tuple)])
    db.commit()
    batch.clear()
