"""The soak's curve (soak_torture.py): what is sampled from fetchd and its files, the windows it
is read in, the verdict, and the table and sparklines printed."""
import os, sqlite3, time
from soak_history import HISTORY_CAP
from torture_common import cpu_seconds, rss_kib, threads

# Defaults.retain: the snapshot versions a handler keeps.
RETAIN = 3
WINDOWS, WARMUP_WINDOWS = 10, 2
RSS_BOUND_FRACTION, RSS_BOUND_KIB = 0.10, 4096
# Descriptors other than sockets (files, pipes, inotify...): the lowest window median of the late
# span may exceed the early span's by this many. The lowest, not the highest: a leak raises every
# window, while a burst of fetches (each holds its output file, more so since fetches create their
# files and assemble their versions themselves) raises one; a 2-minute run's span is two windows,
# and one busy window (median 30 against 24, the next 24 again) failed it. Sockets: libcurl keeps
# up to http_max_transfers (32) connections, plus fetchctl's connections, the listening socket
# and the journal's.
FD_SLACK, SOCKET_BOUND = 4, 32 + 8
DB_BOUND_FRACTION, DB_BOUND_BYTES, DB_BYTES_PER_ROW = 0.02, 512 * 1024, 128
CONTENT_BOUND_BYTES = 64 * 1024
CPU_RATIO_BOUND, RATE_RATIO_FLOOR = 1.3, 0.75
# Every fetch in flight may hold one staging file or folder (exec slots + http transfers), and
# so may each fetch whose new version waits in <cache>/.staging for its commit batch (its slot
# is already free; a batch takes what has come, 32 or more): room for two batches.
STAGING_BOUND = 4 + 32 + 64
# A run of 90 minutes or more is also read as a line: resident memory fitted from the end of its
# first hour must rise by at most this much per hour of real time (a plateau, not a slow leak
# the early and late windows of a short run cannot tell from noise).
LONG_RUN_SECONDS, LONG_RSS_SLOPE_KIB_PER_HOUR = 90 * 60, 1024
# The bounds, as the JSON output states them.
BOUNDS = {"rss": f"+max({RSS_BOUND_FRACTION:.0%}, {RSS_BOUND_KIB} KiB)",
          "fds": f"median of non-socket fds +{FD_SLACK}; sockets at most {SOCKET_BOUND}",
          "db": f"+max({DB_BOUND_FRACTION:.0%}, {DB_BOUND_BYTES} B) + {DB_BYTES_PER_ROW} B per use/push row",
          "content": f"+{CONTENT_BOUND_BYTES} B + {DB_BYTES_PER_ROW} B per use/push row",
          "cpu_per_fetch": f"x{CPU_RATIO_BOUND} against the reference work", "rate": f"x{RATE_RATIO_FLOOR} at least",
          "versions": f"{RETAIN} (+1 while a batch publishes)", "history_rows": HISTORY_CAP, "staging_files": STAGING_BOUND,
          "rss_slope_after_first_hour": f"{LONG_RSS_SLOPE_KIB_PER_HOUR} KiB/h, runs of {LONG_RUN_SECONDS // 60} min or more"}


def file_size(path):
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def cache_figures(root):
    """Bytes and files in the cache, staging files, and the most versions any handler holds."""
    total = files = staging = most_versions = 0
    # Fetches in progress stage their version folders in <cache>/.staging (none at exit).
    staging = len(os.listdir(f"{root}/.staging")) if os.path.isdir(f"{root}/.staging") else 0
    for handler in os.listdir(root):
        folder = f"{root}/{handler}"
        if handler.startswith(".") or not os.path.isdir(folder):
            continue
        versions = os.listdir(f"{folder}/versions") if os.path.isdir(f"{folder}/versions") else []
        most_versions = max(most_versions, len(versions))
        for directory, _, names in os.walk(folder):
            for name in names:
                files += 1
                total += os.lstat(f"{directory}/{name}").st_size
    return total, files, staging, most_versions


def descriptors(pid):
    """fetchd's open descriptors: sockets, and all the rest (files, pipes, inotify, eventfds...).
    Sockets come and go with libcurl's connection cache (up to http_max_transfers kept open)
    and with fetchctl's connections; the rest is what a leak would pile up."""
    sockets = other = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue  # closed meanwhile
        if target.startswith("socket:"):
            sockets += 1
        else:
            other += 1
    return sockets, other


def reference_ms():
    """CPU time of a fixed piece of work in this process, in ms: how fast the machine runs now
    (another job on the same cores slows every process; CPU per fetch is read against it)."""
    start = time.process_time()
    sum(i * i for i in range(100_000))
    return round(1000 * (time.process_time() - start), 2)


def sample(daemon, began, seasoned_id):
    """One row of the curve."""
    path = f"{daemon.work}/state/state.sqlite"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        last_id = db.execute("SELECT max(id) FROM fetch_history").fetchone()[0]
        history_rows, most_history = db.execute(
            "SELECT sum(c), max(c) FROM (SELECT count(*) c FROM fetch_history GROUP BY handler)").fetchone()
        use_rows = db.execute("SELECT count(*) FROM usage_event").fetchone()[0]
        push_rows = db.execute("SELECT count(*) FROM push_event").fetchone()[0]
        # What the rows hold (payload) and the room left inside the file's pages (unused).
        payload, unused = db.execute("SELECT sum(payload), sum(unused) FROM dbstat").fetchone()
    finally:
        db.close()
    cache_bytes, cache_files, staging, most_versions = cache_figures(f"{daemon.work}/cache")
    pid = daemon.pid
    sockets, other = descriptors(pid)
    return {"t": round(time.monotonic() - began, 1), "rss_kib": rss_kib(pid), "fds": sockets + other, "sockets": sockets,
            "other_fds": other, "threads": threads(pid), "cpu_s": round(cpu_seconds(pid), 2),
            "fetches": last_id - seasoned_id, "db_bytes": file_size(path), "wal_bytes": file_size(path + "-wal"),
            "payload_bytes": payload, "unused_bytes": unused, "history_rows": history_rows, "most_history": most_history,
            "use_rows": use_rows, "push_rows": push_rows, "cache_bytes": cache_bytes, "cache_files": cache_files,
            "staging_files": staging, "most_versions": most_versions, "reference_ms": reference_ms()}


def at_or_before(samples, t):
    """The last sample taken at or before `t` seconds (the first one for an earlier `t`)."""
    return ([s for s in samples if s["t"] <= t] or samples[:1])[-1]


def windows(samples, seconds):
    """Per tenth of the run: fetches, CPU per fetch and the ranges of what was sampled."""
    rows = []
    for w in range(WINDOWS):
        start, end = seconds * w / WINDOWS, seconds * (w + 1) / WINDOWS
        inside = [s for s in samples if start < s["t"] <= end] or [at_or_before(samples, end)]
        first, last = at_or_before(samples, start), at_or_before(samples, end)
        fetches = last["fetches"] - first["fetches"]
        rows.append({
            "window": w + 1, "from_s": round(start), "to_s": round(end), "fetches": fetches,
            "fetches_per_minute": round(fetches / ((last["t"] - first["t"]) / 60), 1) if last["t"] > first["t"] else 0,
            "cpu_ms_per_fetch": round(1000 * (last["cpu_s"] - first["cpu_s"]) / fetches, 3) if fetches else None,
            "cpu_s": round(last["cpu_s"] - first["cpu_s"], 2),
            "rss_kib_mean": round(sum(s["rss_kib"] for s in inside) / len(inside)),
            "rss_kib_max": max(s["rss_kib"] for s in inside),
            "fds_min": min(s["fds"] for s in inside), "fds_max": max(s["fds"] for s in inside),
            "other_fds_median": sorted(s["other_fds"] for s in inside)[len(inside) // 2],
            "other_fds_max": max(s["other_fds"] for s in inside), "sockets_max": max(s["sockets"] for s in inside),
            "threads_max": max(s["threads"] for s in inside),
            "db_wal_bytes_max": max(s["db_bytes"] + s["wal_bytes"] for s in inside),
            "cache_bytes_max": max(s["cache_bytes"] for s in inside),
            "staging_files_max": max(s["staging_files"] for s in inside),
            "payload_bytes": last["payload_bytes"], "unused_bytes": last["unused_bytes"],
            "reference_ms": round(sum(s["reference_ms"] for s in inside) / len(inside), 2),
            "use_rows": last["use_rows"], "push_rows": last["push_rows"]})
    return rows


def span(rows, first, last):
    """Windows first..last (1-based) as one: summed fetches and CPU, the extremes of the rest (the
    descriptors' floor: see FD_SLACK)."""
    part = rows[first - 1:last]
    fetches, cpu = sum(r["fetches"] for r in part), sum(r["cpu_s"] for r in part)
    return {"fetches": fetches, "cpu_ms_per_fetch": 1000 * cpu / fetches if fetches else float("inf"),
            "fetches_per_minute": sum(r["fetches_per_minute"] for r in part) / len(part),
            "rss_kib": sum(r["rss_kib_mean"] for r in part) / len(part), "rss_kib_max": max(r["rss_kib_max"] for r in part),
            "fds_max": max(r["fds_max"] for r in part), "fds_min": min(r["fds_min"] for r in part),
            "other_fds_median": min(r["other_fds_median"] for r in part), "sockets_max": max(r["sockets_max"] for r in part),
            "db_wal_bytes": max(r["db_wal_bytes_max"] for r in part), "cache_bytes": max(r["cache_bytes_max"] for r in part),
            "staging_files": max(r["staging_files_max"] for r in part),
            "payload_bytes": part[-1]["payload_bytes"], "unused_bytes": part[-1]["unused_bytes"],
            "reference_ms": sum(r["reference_ms"] for r in part) / len(part),
            "rows": part[-1]["use_rows"] + part[-1]["push_rows"]}


def slope_per_hour(samples, key, after):
    """Least-squares slope of `key` over the samples after `after` seconds, per hour."""
    points = [(s["t"], s[key]) for s in samples if s["t"] > after]
    if len(points) < 3:
        return 0.0
    mean_t, mean_v = sum(t for t, _ in points) / len(points), sum(v for _, v in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return 3600 * sum((t - mean_t) * (v - mean_v) for t, v in points) / spread if spread else 0.0


def sparkline(values):
    bars = "▁▂▃▄▅▆▇█"
    low, high = min(values), max(values)
    return "".join(bars[int((v - low) / (high - low) * 7)] if high > low else bars[0] for v in values)


def print_curve(rows):
    """The curve by window, as a table and as sparklines (each scaled from its own least to most)."""
    print(f"{'window':>12} {'fetches':>7} {'/min':>5} {'CPU ms/fetch':>12} {'ref ms':>6} {'RSS MiB':>7} {'fds':>7} "
          f"{'threads':>7} {'DB+WAL MiB':>10} {'content MiB':>11} {'cache MiB':>9} {'uses+pushes':>11}")
    for r in rows:
        label = f"{r['from_s'] // 60}:{r['from_s'] % 60:02d}-{r['to_s'] // 60}:{r['to_s'] % 60:02d}" \
            + ("*" if r["window"] <= WARMUP_WINDOWS else " ")
        cpu = f"{r['cpu_ms_per_fetch']:.2f}" if r["cpu_ms_per_fetch"] is not None else "-"
        print(f"{label:>12} {r['fetches']:>7} {r['fetches_per_minute']:>5.0f} {cpu:>12} {r['reference_ms']:>6.1f} "
              f"{r['rss_kib_mean'] / 1024:>7.1f} {r['fds_min']:>3}-{r['fds_max']:<3} {r['other_fds_median']:>4} "
              f"{r['threads_max']:>7} "
              f"{r['db_wal_bytes_max'] / 2**20:>10.2f} {r['payload_bytes'] / 2**20:>11.2f} {r['cache_bytes_max'] / 2**20:>9.2f} "
              f"{r['use_rows'] + r['push_rows']:>11}")
    print("(* warm-up; !sock: median of descriptors other than sockets; ref ms: CPU time of a fixed piece of work in "
          "the sampler, how fast the machine ran; content: the rows' bytes in the database)")
    for title, values, unit in (("RSS", [r["rss_kib_mean"] / 1024 for r in rows], "MiB"),
                                ("fds", [r["fds_max"] for r in rows], "at most"),
                                ("non-sock", [r["other_fds_median"] for r in rows], "fds (median)"),
                                ("DB+WAL", [r["db_wal_bytes_max"] / 2**20 for r in rows], "MiB"),
                                ("content", [r["payload_bytes"] / 2**20 for r in rows], "MiB"),
                                ("CPU", [r["cpu_ms_per_fetch"] or 0 for r in rows], "ms per fetch")):
        print(f"{title:>8} {sparkline(values)}  {min(values):.2f}..{max(values):.2f} {unit}")


def cpu_ratio(early, late):
    """CPU per fetch late against early, each divided by the reference work's time then."""
    return (late["cpu_ms_per_fetch"] / late["reference_ms"]) / (early["cpu_ms_per_fetch"] / early["reference_ms"])


def verdict(rows, samples, results, short):
    """The violations, as messages (empty: the run passed), and the figures compared."""
    early, late = span(rows, WARMUP_WINDOWS + 1, WARMUP_WINDOWS + 2), span(rows, WINDOWS - 1, WINDOWS)
    problems = []
    rss_bound = max(RSS_BOUND_FRACTION * early["rss_kib"], RSS_BOUND_KIB)
    if late["rss_kib"] - early["rss_kib"] > rss_bound:
        problems.append(f"resident memory grew from {early['rss_kib']:.0f} KiB to {late['rss_kib']:.0f} KiB "
                        f"(bound +{rss_bound:.0f} KiB)")
    if late["other_fds_median"] > early["other_fds_median"] + FD_SLACK:
        problems.append(f"descriptors other than sockets grew from a median of {early['other_fds_median']} to "
                        f"{late['other_fds_median']} (slack {FD_SLACK})")
    most_sockets = max(s["sockets"] for s in samples)
    if most_sockets > SOCKET_BOUND:
        problems.append(f"{most_sockets} sockets open at once (bound {SOCKET_BOUND})")
    rows_allowance = DB_BYTES_PER_ROW * max(0, late["rows"] - early["rows"])
    db_bound = max(DB_BOUND_FRACTION * early["db_wal_bytes"], DB_BOUND_BYTES) + rows_allowance
    if late["db_wal_bytes"] - early["db_wal_bytes"] > db_bound:
        problems.append(f"database + WAL grew from {early['db_wal_bytes']} to {late['db_wal_bytes']} bytes (bound +{db_bound:.0f})")
    content_bound = CONTENT_BOUND_BYTES + rows_allowance
    if late["payload_bytes"] - early["payload_bytes"] > content_bound:
        problems.append(f"the database's content grew from {early['payload_bytes']} to {late['payload_bytes']} bytes "
                        f"(bound +{content_bound}): rows are not pruned")
    # Another job on the same cores slows every process, fetchd's CPU time per fetch included:
    # each window's CPU per fetch is read against the reference work's time in that window.
    if not short and cpu_ratio(early, late) > CPU_RATIO_BOUND:
        problems.append(f"CPU per fetch went from {early['cpu_ms_per_fetch']:.3f} ms to {late['cpu_ms_per_fetch']:.3f} ms, "
                        f"x{cpu_ratio(early, late):.2f} against the reference work (bound x{CPU_RATIO_BOUND})")
    if not short and late["fetches_per_minute"] < RATE_RATIO_FLOOR * early["fetches_per_minute"]:
        problems.append(f"fetches per minute fell from {early['fetches_per_minute']:.0f} to {late['fetches_per_minute']:.0f}")
    if samples[-1]["t"] >= LONG_RUN_SECONDS:
        slope = slope_per_hour(samples, "rss_kib", 3600)
        if slope > LONG_RSS_SLOPE_KIB_PER_HOUR:
            problems.append(f"resident memory still rises after the first hour: {slope:+.0f} KiB/h fitted "
                            f"(bound +{LONG_RSS_SLOPE_KIB_PER_HOUR} KiB/h)")
    if late["staging_files"] > STAGING_BOUND:
        problems.append(f"{late['staging_files']} staging files at once: they pile up")
    # A batch publishes its new versions before it prunes the old ones: one more for a moment.
    if max(s["most_versions"] for s in samples) > RETAIN + 1:
        problems.append(f"a handler held {max(s['most_versions'] for s in samples)} versions (retain {RETAIN})")
    if max(s["most_history"] for s in samples) > HISTORY_CAP:
        problems.append(f"a handler held {max(s['most_history'] for s in samples)} history rows (cap {HISTORY_CAP})")
    missing = {"newData", "noData", "failed", "expired"} - set(results)
    if missing:
        problems.append(f"results never seen: {sorted(missing)}")
    return problems, early, late
