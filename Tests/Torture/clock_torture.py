#!/usr/bin/env python3
"""Clock jumps and suspend (issue 7): step fetchd's wall clock by hours while monotonic time goes on.

fetchd runs with Tests/Torture/fakeclock.c preloaded (compiled here with cc): CLOCK_REALTIME gets
the offset written to a file it re-reads every 100 ms; CLOCK_MONOTONIC, CLOCK_BOOTTIME and all
timers stay real, as when the system clock is stepped. Handlers run with a clean environment, so
they see the real clock and log their start and end in real time. Events:
  - jump: the wall clock moves forward or back by hours;
  - suspend: the daemon is frozen (SIGSTOP) for seconds while its wall clock moves forward by
    hours, then thawed: what a resume after a long sleep looks like from inside (real monotonic
    time stood nearly still, the wall clock did not).
After each event it checks that every handler fetches again (the schedule recovers), that
`fetchctl status` puts every handler's next eligible time near the daemon's now (never hours
off), and at the end that handlers never overlapped beyond max_concurrent, that no handler ran
again sooner than its min_interval except once right after a forward move (where a wall clock
that is hours later makes everything due), and that the daemon did not spin meanwhile.
First, in a daemon of its own, the `reads` usage source across a step back: a read of a
snapshot some seconds after its fetch must count as a use although the wall clock now says the
fetch finished an hour in the future (the "ran recently" check and the use folder must not
measure on the wall clock).

    python3 Tests/Torture/clock_torture.py --bin-dir .build/debug --events 100
"""
import argparse, os, random, signal, sqlite3, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torture_common import Daemon, build_shim, cpu_seconds, fail, parse_date, wait_until

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakeclock.c")
HANDLERS, INTERVAL_SECONDS, MAX_CONCURRENT = 12, 2.0, 3
HOUR = 3600


def handlers(log):
    text = ""
    for i in range(HANDLERS):
        text += (f'[[handler]]\nname = "c{i:02d}"\nkind = "exec"\nmin_interval = "{int(INTERVAL_SECONDS)}s"\n'
                 f'deadline = "20s"\ncommand = ["/bin/sh", "-c", "echo \\"$FETCHD_HANDLER start $(date +%s.%N)\\" '
                 f'>> {log}; sleep 0.2; echo \\"$FETCHD_HANDLER end $(date +%s.%N)\\" >> {log}; exit 100"]\n\n')
    return text


def read_runs(log):
    """Per handler, its runs as [start, end] in real seconds, in order."""
    runs = {}
    if not os.path.exists(log):
        return runs
    with open(log) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 3:
                continue
            name, what, when = parts[0], parts[1], float(parts[2])
            if what == "start":
                runs.setdefault(name, []).append([when, None])
            elif runs.get(name):
                runs[name][-1][1] = when
    return runs


def max_overlap(runs):
    edges = sorted((t, +1 if kind == 0 else -1) for spans in runs.values() for span in spans
                   for kind, t in enumerate(span) if t is not None)
    most = current = 0
    for _, step in edges:
        current += step
        most = max(most, current)
    return most


def set_offset(path, seconds):
    with open(path + ".tmp", "w") as f:
        f.write(f"{int(seconds):+d}\n")
    os.replace(path + ".tmp", path)


def check_status(daemon, offset, label):
    """Every handler's next eligible time must lie near the daemon's now; returns the worst gap."""
    now = time.time() + offset
    worst = 0.0
    for handler in daemon.status()["handlers"]:
        when = handler.get("next_eligible_at")
        if when is None:
            fail(f"{label}: {handler['name']} has no next eligible time")
        gap = parse_date(when) - now
        worst = max(worst, abs(gap))
        if gap < -60 or gap > INTERVAL_SECONDS + 60:
            fail(f"{label}: {handler['name']} next eligible {gap:+.0f} s from the daemon's now")
    return worst


def reads_across_a_step_back(bin_dir):
    """A `reads` handler fetched once; its snapshot read 2.5 s later (outside the 2 s in which
    the handler's own program may still be reading it), then the wall clock stepped back 1 h and
    the snapshot read again 2.5 s later: both reads must be stored as uses. On the wall clock, the
    fetch would seem to finish an hour from now (its program still running, so the read is not a
    use) and the second read to come before the first (folded into its session)."""
    daemon = Daemon(bin_dir, "clock-reads", handlers=(
        '[[handler]]\nname = "reader"\nkind = "exec"\nmin_interval = "1h"\nusage = ["reads"]\n'
        'command = ["/bin/sh", "-c", "echo content > \\"$FETCHD_OUTPUT\\""]\n'))
    clock_file = f"{daemon.work}/clock-offset"
    set_offset(clock_file, 0)
    daemon.start(env={"LD_PRELOAD": build_shim(SHIM, daemon.work), "FAKECLOCK_FILE": clock_file})
    content = f"{daemon.work}/cache/reader/latest/content"

    def uses():
        db = sqlite3.connect(f"file:{daemon.work}/state/state.sqlite?mode=ro", uri=True, timeout=10)
        try:
            return db.execute("SELECT count(*) FROM usage_event WHERE handler = 'reader'").fetchone()[0]
        finally:
            db.close()

    def fetched():
        handler = daemon.status()["handlers"][0]
        return handler.get("last_result") == "newData" and not handler.get("running")
    if not wait_until(fetched, 30):
        fail("reads: the reader handler was not fetched")
    for number, step in enumerate((0, -HOUR), 1):
        set_offset(clock_file, step)
        time.sleep(2.5)  # the shim re-reads the offset within 0.1 s; the 2 s after the fetch pass
        with open(content) as f:
            f.read()
        if not wait_until(lambda: uses() >= number, 10):
            fail(f"reads: read {number} ({'after the wall clock stepped back 1 h' if step else 'no step'}) "
                 f"was not stored as a use ({uses()} stored); see {daemon.log_path}")
    if daemon.stop() != 0:
        fail("reads: fetchd did not exit cleanly")
    daemon.remove()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--events", type=int, default=100, help="random events; 0: the fixed short sequence")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    # The short sequence: forward 3 h, back 6 h, then a suspend that wakes 8 h later.
    events = [("jump", 3 * HOUR), ("jump", -6 * HOUR), ("suspend", 8 * HOUR)] if args.events == 0 else [
        ("suspend", rng.randint(1, 12) * HOUR) if rng.random() < 0.3
        else ("jump", rng.choice([-1, 1]) * rng.randint(1, 12) * HOUR) for _ in range(args.events)]
    reads_across_a_step_back(args.bin_dir)
    daemon = Daemon(args.bin_dir, "clock", main=f"max_concurrent = {MAX_CONCURRENT}")
    runs_log = f"{daemon.work}/runs.log"
    daemon.write_handlers(handlers(runs_log))
    library = build_shim(SHIM, daemon.work)
    clock_file = f"{daemon.work}/clock-offset"
    offset = 0
    set_offset(clock_file, offset)
    # Added to a preload the run already has (`make test-tsan` preloads Tests/Sanitizers/tsan_mutex.c's).
    preload = " ".join(filter(None, [library, os.environ.get("LD_PRELOAD")]))
    daemon.start(env={"LD_PRELOAD": preload, "FAKECLOCK_FILE": clock_file})
    began = time.time()
    if not wait_until(lambda: len(read_runs(runs_log)) == HANDLERS, 30):
        fail("not every handler ran after start")
    forward, worst_status = 0, 0.0
    for number, (kind, step) in enumerate(events, 1):
        at = time.time()
        if kind == "suspend":
            os.kill(daemon.pid, signal.SIGSTOP)
            offset += step
            set_offset(clock_file, offset)
            time.sleep(rng.uniform(1.5, 4))
            os.kill(daemon.pid, signal.SIGCONT)
        else:
            offset += step
            set_offset(clock_file, offset)
        forward += step > 0
        label = f"event {number} ({kind} {step / HOUR:+.0f} h, wall clock now {offset / HOUR:+.0f} h)"
        # Recovery: every handler starts again after the event (the shim re-reads the offset
        # within 0.1 s, so a start after at + 1.2 s was planned on the new clock).
        recovered = lambda: all(any(s >= at + 1.2 for s, _ in spans) for spans in read_runs(runs_log).values())
        if not wait_until(recovered, 40):
            late = [n for n, spans in read_runs(runs_log).items() if not any(s >= at + 1.2 for s, _ in spans)]
            fail(f"{label}: the schedule did not recover: {late} did not fetch again within 40 s")
        worst_status = max(worst_status, check_status(daemon, offset, label))
        if not daemon.alive():
            fail(f"{label}: fetchd died")
        if number % 20 == 0:
            print(f"{number} events, wall clock {offset / HOUR:+.0f} h", flush=True)
    # A quiet spell: nothing spins between fetches.
    cpu_before, quiet_start = cpu_seconds(daemon.pid), time.monotonic()
    time.sleep(4)
    cpu_share = (cpu_seconds(daemon.pid) - cpu_before) / (time.monotonic() - quiet_start)
    status = daemon.stop()
    runs = read_runs(runs_log)
    elapsed = time.time() - began
    overlap = max_overlap(runs)
    short = {name: sum(1 for a, b in zip(spans, spans[1:]) if b[0] - a[0] < INTERVAL_SECONDS - 0.3)
             for name, spans in runs.items()}
    fetches = sum(len(spans) for spans in runs.values())
    if overlap > MAX_CONCURRENT:
        fail(f"{overlap} handlers ran at once, max_concurrent is {MAX_CONCURRENT}")
    if max(short.values()) > forward:
        fail(f"runs sooner than min_interval: {short} (allowed: one per forward move, {forward})")
    if cpu_share > 0.5:
        fail(f"fetchd used {cpu_share:.0%} of a core in a quiet spell: it spins")
    if status != 0:
        fail(f"fetchd exited with {status} on SIGTERM")
    print(f"clock torture: {len(events)} events ({forward} forward, {len(events) - forward} back; "
          f"{sum(k == 'suspend' for k, _ in events)} suspends) in {elapsed:.0f} s; {fetches} fetches; "
          f"at most {overlap} at once (max_concurrent {MAX_CONCURRENT}); runs sooner than min_interval: "
          f"{sum(short.values())} (at most {max(short.values())} per handler, {forward} allowed); "
          f"status next-eligible at most {worst_status:.0f} s from now; schedule recovered after every event; "
          f"CPU in a quiet spell {cpu_share:.1%} of a core; a snapshot read after a 1 h step back counted as a use")
    daemon.remove()


if __name__ == "__main__":
    main()
