#!/usr/bin/env python3
"""SIGKILL torture (issue 7): kill fetchd at random moments of a busy schedule, restart, check.

A daemon runs 20 exec handlers due every second (random 1 to 64 KiB snapshots) while this script
reports uses (`fetchctl used`) and asks for fetches (`fetchctl fetch --wait`). At a random moment
it sends SIGKILL, then checks before the next start:
  - the state database passes `PRAGMA integrity_check`;
  - every handler's `latest` is a whole snapshot: its content's size and SHA-256 match its
    meta.json (nothing torn);
  - every use and fetch result fetchctl acknowledged is in the database (nothing lost);
and after each restart that scheduling goes on (timer-triggered fetches keep being recorded).
Prints one line per 50 kills and a summary; exits 1 at the first violation.

    python3 Tests/Torture/kill_torture.py --bin-dir .build/debug --kills 500
"""
import argparse, json, os, random, signal, sqlite3, subprocess, sys, tempfile, time
from torture_common import history_count, torn_snapshots

HANDLERS = 20

def write_config(work):
    os.makedirs(f"{work}/etc/handlers.d")
    with open(f"{work}/etc/fetchd.toml", "w") as f:
        f.write(f'heartbeat = "1s"\nkill_grace = "1s"\ncache_dir = "{work}/cache"\n'
                f'state_dir = "{work}/state"\nruntime_dir = "{work}/run"\n')
    with open(f"{work}/etc/handlers.d/torture.toml", "w") as f:
        for i in range(HANDLERS):
            f.write(f'[[handler]]\nname = "h{i:02d}"\nkind = "exec"\nmin_interval = "1s"\n'
                    f'usage = ["explicit"]\n' if i < 5 else f'[[handler]]\nname = "h{i:02d}"\nkind = "exec"\nmin_interval = "1s"\n')
            f.write('command = ["/bin/sh", "-c", "head -c $(( (RANDOM %% 64 + 1) * 1024 )) /dev/urandom > \\"$FETCHD_OUTPUT\\""]\n\n'
                    .replace("%%", "%"))

def fetchctl(bin_dir, work, *args, timeout=10):
    try:
        return subprocess.run([f"{bin_dir}/fetchctl", *args, "--socket", f"{work}/run/control.sock"],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None

def start(bin_dir, work, log):
    proc = subprocess.Popen([f"{bin_dir}/fetchd", "--config", f"{work}/etc/fetchd.toml"],
                            stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        result = fetchctl(bin_dir, work, "ping", timeout=2)
        if result is not None and result.returncode == 0:
            return proc
        if proc.poll() is not None:
            sys.exit(f"fetchd exited with {proc.returncode} at start; see {work}/fetchd.log")
        time.sleep(0.05)
    sys.exit(f"fetchd did not answer within 20 s; see {work}/fetchd.log")

def check(work, acked_uses, acked_fetches):
    """Returns a violation, or None."""
    db = sqlite3.connect(f"{work}/state/state.sqlite")
    try:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        if integrity != "ok":
            return f"integrity_check: {integrity}"
        for handler, count in acked_uses.items():
            stored = db.execute("SELECT count(*) FROM usage_event WHERE handler = ?", (handler,)).fetchone()[0]
            if stored < count:
                return f"{handler}: {count} uses acknowledged, {stored} stored"
        for handler, count in acked_fetches.items():
            stored = db.execute("SELECT count(*) FROM fetch_history WHERE handler = ? AND trigger = 'manual'",
                                (handler,)).fetchone()[0]
            if stored < count:
                return f"{handler}: {count} fetches acknowledged, {stored} in history"
    finally:
        db.close()
    torn = torn_snapshots(f"{work}/cache", [f"h{i:02d}" for i in range(HANDLERS)])
    if torn:
        return torn[0]
    return None

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--kills", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="fetchd-kill-torture-")
    write_config(work)
    log = open(f"{work}/fetchd.log", "ab")
    acked_uses, acked_fetches, total_uses, total_fetches, stalled = {}, {}, 0, 0, 0
    began = time.monotonic()
    for kill in range(1, args.kills + 1):
        before = history_count(work, 'timer') if os.path.exists(f"{work}/state/state.sqlite") else 0
        proc = start(args.bin_dir, work, log)
        deadline = time.monotonic() + rng.uniform(0.05, 1.5)
        while time.monotonic() < deadline:
            handler = f"h{rng.randrange(HANDLERS):02d}"
            if rng.random() < 0.5 and handler < "h05":
                result = fetchctl(args.bin_dir, work, "used", handler)
                if result is not None and result.returncode == 0:
                    acked_uses[handler] = acked_uses.get(handler, 0) + 1
                    total_uses += 1
            else:
                result = fetchctl(args.bin_dir, work, "fetch", handler, "--wait", "--json")
                if result is not None and result.returncode == 0:
                    report = json.loads(result.stdout)
                    report = report.get("fetch", report)
                    # A fetch that joined a running one is that one's (timer) record.
                    if report.get("result") and not report.get("joined_running"):
                        acked_fetches[handler] = acked_fetches.get(handler, 0) + 1
                        total_fetches += 1
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        violation = check(work, acked_uses, acked_fetches)
        if violation:
            sys.exit(f"kill {kill}: {violation} (files in {work})")
        if history_count(work, 'timer') == before:
            stalled += 1  # a kill within the first second may come before any timer fetch
        if kill % 50 == 0 or kill == args.kills:
            print(f"{kill} kills, {total_uses} uses and {total_fetches} fetches acknowledged, "
                  f"all stored; {time.monotonic() - began:.0f} s", flush=True)
    after = history_count(work, 'timer')
    print(f"SIGKILL torture: {args.kills} kills; integrity_check ok and no torn snapshot after every one; "
          f"{total_uses} acknowledged uses and {total_fetches} acknowledged fetches, none lost; "
          f"{after} timer fetches recorded, rounds without a new one: {stalled}")
    if stalled > args.kills // 2:
        sys.exit("scheduling did not go on after restarts")
    subprocess.run(["rm", "-rf", work])

if __name__ == "__main__":
    main()
