#!/usr/bin/env python3
"""Soak (issue 7): a day of a 200-handler schedule against a loopback server, compressed 72 times
(a day every 20 minutes), while resident memory, file descriptors, database and cache size and
CPU per fetch are sampled. After the warm-up they must stay flat.

The handlers: 179 http handlers against soak_server.py (unchanging bodies answered 304, bodies
that change now and then, gzip, redirects, max-age and Retry-After floors, 404, 503, answers
past the deadline, hang-ups, a closed port), 20 of them planned from usage (10 `explicit`, 10
`reads`), and 21 exec handlers (new data, no data, failures, past the deadline, ones reading
their previous snapshot, two woken by pushes). Their min_interval is a real-life one (5 min to
2 h) divided by 72, so each handler makes a day's worth of fetches in 20 minutes: what can leak
leaks per operation, and the operations of a day are what the run repeats.

The database starts as a long-running daemon's would (`season`): every handler's history at its
cap of 1,000 rows (Defaults.historyKeepPerHandler), and the file's pages as holed as pruning
leaves them, by replaying 1.5 lifetimes of the slowest handler's rows of this same schedule with
sqlite3 before the start (about 2 million fetches inserted and pruned, a minute or two). A fresh
database would grow through the whole run while filling up to the cap, and one filled in a single
pass would grow while pruning opens holes in its pages; neither says anything about a leak.

Meanwhile, like real users: `fetchctl used` every 3 s, a read of a snapshot every 2 s (the
`reads` handlers learn from them), a push every 5 s, `fetch --wait` every 20 s, `history` every
30 s, `status` at every sample.

Verdict, between the early window (20 to 40 % of the run, after the warm-up) and the late one
(80 to 100 %): resident memory grows by less than 10 % or 4 MiB (whichever is larger); the
median of the descriptors other than sockets grows by at most 4, and sockets never exceed 40
(libcurl's connection cache holds up to 32); database + WAL grow by at most 2 % or 512 KiB, and
the rows' content by at most 64 KiB, plus 128 bytes for each use or push row added (kept 60
days and 1 day by design); no handler holds more than `retain` versions (one more while a batch
publishes) or 1,000 history rows; staging files do not pile up (none after the stop); CPU per
fetch late within 1.3 times early, each read against the time a fixed piece of work took in the
sampler meanwhile (other jobs on the same cores slow every process: that is not fetchd's doing);
fetches per minute late at least 0.75 times early (`--short`, for make test, skips these two).
Also: every result (newData, noData, failed, expired) occurs, and fetchd exits 0 on SIGTERM with
a sound database.

    python3 Tests/Torture/soak_torture.py --bin-dir .build/debug --minutes 20 --json soak.json
"""
import argparse, json, os, random, socket, sqlite3, subprocess, sys, time
from datetime import datetime
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak_history import season
from soak_report import (BOUNDS, RETAIN, WARMUP_WINDOWS, WINDOWS, cache_figures, cpu_ratio, file_size, print_curve,
                         sample, slope_per_hour, verdict, windows)
from torture_common import Daemon, fail

HERE = os.path.dirname(os.path.abspath(__file__))
SPEEDUP = 72
# Real-life min_intervals, in minutes, with how often each is chosen.
DAY_INTERVALS_MINUTES = {5: 1, 15: 4, 30: 3, 60: 2, 120: 1}


def interval_ms(rng):
    minutes = rng.choices(list(DAY_INTERVALS_MINUTES), weights=list(DAY_INTERVALS_MINUTES.values()))[0]
    return minutes * 60_000 // SPEEDUP


def handlers(port, closed_port, rng):
    """The 200 handlers' TOML; per handler its kind of path and its min_interval in seconds."""
    text, kinds, intervals = "", {}, {}

    def add(name, kind, body):
        nonlocal text
        kinds[name], milliseconds = kind, interval_ms(rng)
        intervals[name] = milliseconds / 1000
        text += f'[[handler]]\nname = "{name}"\nmin_interval = "{milliseconds}ms"\n{body}\n'

    base = f"http://127.0.0.1:{port}"
    http = [("static", 86, ""), ("changing", 40, ""), ("gzip", 6, ""), ("redirect", 4, ""), ("cached", 4, ""),
            ("missing", 5, ""), ("busy", 4, ""), ("slow", 4, 'deadline = "2s"\n'), ("hangup", 3, "")]
    number = 0
    for kind, count, extra in http:
        for _ in range(count):
            add(f"{kind}-{number:03d}", kind, f'kind = "http"\nurl = "{base}/{kind}/{number}"\n{extra}')
            number += 1
    for i in range(3):
        add(f"refused-{i}", "refused", f'kind = "http"\nurl = "http://127.0.0.1:{closed_port}/x"\n')
    for source in ("explicit", "reads"):
        for i in range(10):
            add(f"{source}-{i}", source,
                f'kind = "http"\nurl = "{base}/changing/{number}"\nusage = ["{source}"]\nbudget = "1440/day"\n')
            number += 1
    programs = {
        "newdata": (5, 'head -c 4096 /dev/urandom > "$FETCHD_OUTPUT"', ""),
        "nodata": (4, "exit 100", ""),
        "failing": (4, 'echo "soak: a failure on purpose" >&2; exit 3', ""),
        "overrun": (3, "sleep 30", 'deadline = "2s"\n'),
        "previous": (3, 'wc -c < "${FETCHD_PREVIOUS:-/dev/null}" > "$FETCHD_OUTPUT"; date +%s%N >> "$FETCHD_OUTPUT"', ""),
        "pushed": (2, 'echo "${FETCHD_PUSH_DATA:-none} $(date +%s%N)" > "$FETCHD_OUTPUT"', 'push_limit = "6/50s"\n'),
    }
    for kind, (count, script, extra) in programs.items():
        for i in range(count):
            add(f"{kind}-{i}", kind, f'kind = "exec"\ncommand = {json.dumps(["/bin/sh", "-c", script])}\n{extra}')
    return text, kinds, intervals


def closed_port():
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Load:
    """What users and programs do meanwhile: each action at its own period."""

    def __init__(self, daemon, kinds, rng):
        self.daemon, self.kinds, self.rng = daemon, kinds, rng
        self.counts = {"used": 0, "reads": 0, "pushes": 0, "fetches": 0, "history": 0}
        self.names = lambda *wanted: sorted(n for n, k in kinds.items() if k in wanted)

    def expect(self, result, what):
        if result is None or result.returncode != 0:
            fail(f"{what}: no answer or an error: {result and (result.stdout + result.stderr)}")

    def used(self):
        name = self.rng.choice(self.names("explicit"))
        self.expect(self.daemon.fetchctl("used", name), f"used {name}")
        self.counts["used"] += 1

    def read(self):
        # Mostly the reads-learning handlers; sometimes any snapshot (not a use).
        pool = self.names("reads") if self.rng.random() < 0.7 else sorted(self.kinds)
        try:
            with open(f"{self.daemon.work}/cache/{self.rng.choice(pool)}/latest/content", "rb") as f:
                f.read()
            self.counts["reads"] += 1
        except FileNotFoundError:
            pass  # no snapshot yet (or never: a handler that only fails)

    def push(self):
        name = self.rng.choice(self.names("pushed"))
        self.expect(self.daemon.fetchctl("push", name, "--data", json.dumps({"n": self.counts["pushes"]})), f"push {name}")
        self.counts["pushes"] += 1

    def fetch(self):
        name = self.rng.choice(sorted(self.kinds))
        result = self.daemon.fetchctl("fetch", name, "--wait", timeout=60)
        # Exit status 1 is a fetch that failed: an answer all the same.
        if result is None or not result.stdout.startswith(f"{name}: "):
            fail(f"fetch {name} --wait: no answer: {result and (result.stdout + result.stderr)}")
        self.counts["fetches"] += 1

    def history(self):
        name = self.rng.choice(sorted(self.kinds))
        self.expect(self.daemon.fetchctl("history", name), f"history {name}")
        self.counts["history"] += 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--minutes", type=float, default=20, help="length of the run; 20 = one compressed day")
    parser.add_argument("--sample-seconds", type=float, default=10)
    parser.add_argument("--json", help="write the curve and the verdict here")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--replay-cycles", type=float, default=1.5,
                        help="history replayed before the start, in lifetimes of the slowest handler's rows")
    parser.add_argument("--short", action="store_true",
                        help="make test's run: skip the CPU-per-fetch and rate comparisons (windows of seconds, "
                             "on a machine busy with other tests, cannot tell a trend from noise)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    server = subprocess.Popen([sys.executable, f"{HERE}/soak_server.py"], stdout=subprocess.PIPE, text=True)
    try:
        run(args, rng, int(server.stdout.readline()))
    finally:
        server.kill()
        server.wait()


def run(args, rng, port):
    text, kinds, intervals = handlers(port, closed_port(), rng)
    daemon = Daemon(args.bin_dir, "soak")
    # The database is made by fetchd itself (its migrations), then seasoned while it is stopped.
    daemon.start()
    if daemon.stop() != 0:
        fail("fetchd did not stop cleanly after creating its database")
    seasoning = time.monotonic()
    seasoned_id, replayed = season(f"{daemon.work}/state/state.sqlite", kinds, intervals, rng, args.replay_cycles)
    print(f"database seasoned in {time.monotonic() - seasoning:.0f} s: {replayed} fetches replayed "
          f"({file_size(daemon.work + '/state/state.sqlite') / 2**20:.1f} MiB)", flush=True)
    daemon.write_handlers(text)
    daemon.start()
    load = Load(daemon, kinds, rng)
    samples = drive(daemon, load, args, seasoned_id, rng)
    stored = stored_figures(daemon, kinds, intervals, seasoned_id, samples[-1]["t"])
    rows = windows(samples, samples[-1]["t"])
    problems, early, late = verdict(rows, samples, stored["results"], args.short)
    problems += after_the_stop(daemon)
    print_curve(rows)
    rss_slope = slope_per_hour(samples, "rss_kib", samples[-1]["t"] * WARMUP_WINDOWS / WINDOWS)
    normalized, sockets = cpu_ratio(early, late), max(s["sockets"] for s in samples)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"date": datetime.now().strftime("%Y-%m-%d"), "minutes": args.minutes, "speedup": SPEEDUP,
                       "handlers": len(kinds), "replayed_fetches": replayed, "fetches": samples[-1]["fetches"], **stored,
                       "load": load.counts, "early": early, "late": late, "rss_kib_per_hour_after_warmup": round(rss_slope),
                       "rss_kib_per_hour_after_first_hour": round(slope_per_hour(samples, "rss_kib", 3600))
                       if samples[-1]["t"] > 3600 else None,
                       "cpu_per_fetch_ratio": round(late["cpu_ms_per_fetch"] / early["cpu_ms_per_fetch"], 3),
                       "cpu_per_fetch_ratio_against_reference": round(normalized, 3), "bounds": BOUNDS,
                       "violations": problems, "windows": rows, "samples": samples}, f, indent=1)
    print(f"soak torture: {len(kinds)} handlers for {args.minutes:g} min ({args.minutes * SPEEDUP / 1440:.2f} compressed days); "
          f"{samples[-1]['fetches']} fetches ({', '.join(f'{k} {v}' for k, v in sorted(stored['results'].items()))}); "
          f"{load.counts['used']} uses, {load.counts['reads']} reads, {load.counts['pushes']} pushes, "
          f"{load.counts['fetches']} fetch --wait; early (20-40 %) vs late (80-100 %): "
          f"RSS {early['rss_kib'] / 1024:.1f} -> {late['rss_kib'] / 1024:.1f} MiB ({rss_slope / 1024:+.1f} MiB/h fitted), "
          f"fds at most {early['fds_max']} -> {late['fds_max']} (non-socket median {early['other_fds_median']} -> "
          f"{late['other_fds_median']}, sockets at most {sockets}), "
          f"DB+WAL {early['db_wal_bytes'] / 2**20:.2f} -> {late['db_wal_bytes'] / 2**20:.2f} MiB "
          f"(content {early['payload_bytes'] / 2**20:.2f} -> {late['payload_bytes'] / 2**20:.2f} MiB), "
          f"CPU per fetch {early['cpu_ms_per_fetch']:.2f} -> {late['cpu_ms_per_fetch']:.2f} ms "
          f"(x{late['cpu_ms_per_fetch'] / early['cpu_ms_per_fetch']:.2f}; x{normalized:.2f} against the reference work), "
          f"fetches/min {early['fetches_per_minute']:.0f} -> {late['fetches_per_minute']:.0f}")
    if problems:
        fail("; ".join(problems) + f" (files in {daemon.work})")
    if os.environ.get("TORTURE_KEEP"):
        print(f"files kept in {daemon.work}")
    else:
        daemon.remove()


def drive(daemon, load, args, seasoned_id, rng):
    """Runs the load for the run's length, sampling as it goes; returns the samples."""
    seconds = args.minutes * 60
    began = time.monotonic()
    actions = [(args.sample_seconds, None), (3, load.used), (2, load.read), (5, load.push), (20, load.fetch), (30, load.history)]
    due = [began + period * rng.random() for period, _ in actions]
    samples = [sample(daemon, began, seasoned_id)]
    due[0] = began + args.sample_seconds
    while True:
        index = min(range(len(actions)), key=due.__getitem__)
        time.sleep(max(0.0, due[index] - time.monotonic()))
        if not daemon.alive():
            fail(f"fetchd died; see {daemon.log_path}")
        period, action = actions[index]
        if action is None:
            daemon.status()  # an administrator looks; fails the run when it does not answer
            samples.append(sample(daemon, began, seasoned_id))
            if len(samples) % max(1, int(60 / args.sample_seconds)) == 0:
                s = samples[-1]
                print(f"{s['t'] / 60:5.1f} min: {s['fetches']} fetches, RSS {s['rss_kib']} KiB, {s['fds']} fds, "
                      f"DB+WAL {(s['db_bytes'] + s['wal_bytes']) / 2**20:.2f} MiB, CPU {s['cpu_s']:.0f} s", flush=True)
            if samples[-1]["t"] >= seconds:
                return samples
        else:
            action()
        due[index] += period


def stored_figures(daemon, kinds, intervals, seasoned_id, seconds):
    """What the database says about the run's fetches: results, triggers, the pace of each kind
    of handler (fetches per handler per minute, and what min_interval allows), and the text a
    row holds, replayed and real (the replay's rows are meant to be alike)."""
    db = sqlite3.connect(f"file:{daemon.work}/state/state.sqlite?mode=ro", uri=True)
    try:
        def grouped(column):
            return dict(db.execute(f"SELECT {column}, count(*) FROM fetch_history WHERE id > ? GROUP BY {column}",
                                   (seasoned_id,)))
        per_handler, by_kind = grouped("handler"), {}
        for name, kind in kinds.items():
            by_kind.setdefault(kind, []).append(name)
        rates = {kind: {"per_minute": round(sum(per_handler.get(n, 0) for n in names) / len(names) / (seconds / 60), 2),
                        "min_interval_allows": round(sum(60 / intervals[n] for n in names) / len(names), 2)}
                 for kind, names in sorted(by_kind.items())}
        text = "avg(length(coalesce(reason, '')) + length(coalesce(sha256, '')) + length(coalesce(version, '')))"
        text_bytes = {which: round(db.execute(f"SELECT {text} FROM fetch_history WHERE id {op} ?", (seasoned_id,)).fetchone()[0], 1)
                      for which, op in (("replayed", "<="), ("soak", ">"))}
        return {"results": grouped("result"), "triggers": grouped("trigger"), "fetch_rates_by_kind": rates,
                "row_text_bytes_mean": text_bytes}
    finally:
        db.close()


def after_the_stop(daemon):
    """Stops fetchd; the problems found: an unclean exit, an unsound database, staging files
    left behind, more versions than `retain`."""
    problems = []
    status = daemon.stop()
    if status != 0:
        problems.append(f"fetchd exited with {status} on SIGTERM")
    db = sqlite3.connect(f"{daemon.work}/state/state.sqlite")
    integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    db.close()
    if integrity != "ok":
        problems.append(f"integrity_check after the stop: {integrity}")
    _, _, leftover, most_versions = cache_figures(f"{daemon.work}/cache")
    if leftover:
        problems.append(f"{leftover} staging files left after the stop")
    if most_versions > RETAIN:
        problems.append(f"a handler holds {most_versions} versions after the stop (retain {RETAIN})")
    return problems


if __name__ == "__main__":
    main()
