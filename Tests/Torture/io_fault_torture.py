#!/usr/bin/env python3
"""I/O errors at every point of a wake (issue 26): fail one write, truncation, sync, rename, mkdir,
rmdir, unlink, symlink or open of fetchd's data with EIO, ENOSPC or EDQUOT, and check what is left.

A 3-handler configuration (an http handler reading a file:// URL, two exec handlers) gets one
clean `fetchd --once` first. Then a counting run under Tests/Torture/iofault.c (LD_PRELOAD) lists
every call of such a wake that touches the cache or the state folder: these are the fault
points. For each point n and each errno, on a fresh copy of the first run's folders:
  - `fetchd --once` with the n-th call failing must exit by itself (no signal, no crash);
  - every handler's `latest` is a whole snapshot (content's size and SHA-256 match meta.json);
  - the state database passes `PRAGMA integrity_check`;
  - every result fetchd logged is in the database (nothing acknowledged and lost);
  - a fetch the fault made fail is recorded as failed with the errno's meaning (e.g. "No space
    left on device") in its reason;
  - then, the fault gone, `fetchd --once` fetches all three handlers as new data, and the
    checks above hold again.
Prints a summary; exits 1 at the first violation (the folder is kept).

    python3 Tests/Torture/io_fault_torture.py --bin-dir .build/debug
    python3 Tests/Torture/io_fault_torture.py --bin-dir .build/debug --every 5   # a sample (make test)
"""
import argparse, os, re, shutil, sqlite3, subprocess, sys, tempfile
from torture_common import build_shim, history_count, torn_snapshots

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "iofault.c")

HANDLERS = ["page", "random", "clock"]
MEANING = {"EIO": "Input/output error", "ENOSPC": "No space left on device", "EDQUOT": "Disk quota exceeded"}
PAGE = None  # the file the http handler reads, outside the copied folders
RESULT_LINE = re.compile(r"\] (\S+): (newData|noData|failed|expired)")


def write_config(base, page):
    """The configuration, in `base`/etc; the folders are given on the command line, so a copy of
    `base` runs on its own files."""
    os.makedirs(f"{base}/etc/handlers.d")
    open(f"{base}/etc/fetchd.toml", "w").close()
    with open(f"{base}/etc/handlers.d/io.toml", "w") as f:
        f.write(f'[[handler]]\nname = "page"\nkind = "http"\nurl = "file://{page}"\nallow_file_urls = true\n\n'
                '[[handler]]\nname = "random"\nkind = "exec"\n'
                'command = ["/bin/sh", "-c", "head -c 4096 /dev/urandom > \\"$FETCHD_OUTPUT\\""]\n\n'
                '[[handler]]\nname = "clock"\nkind = "exec"\n'
                'command = ["/bin/sh", "-c", "date +%s%N > \\"$FETCHD_OUTPUT\\""]\n')


def run_once(bin_dir, work, shim=None, call=0, errno_name="EIO", log=None):
    """One `fetchd --once` on `work` (a new page first, so every handler has new data)."""
    with open(PAGE, "w") as f:
        f.write(os.urandom(16).hex())
    env = dict(os.environ, SWIFT_BACKTRACE="enable=no")
    if shim:
        env.update(LD_PRELOAD=shim, IOFAULT_PREFIXES=f"{work}/cache:{work}/state", IOFAULT_CALL=str(call),
                   IOFAULT_ERRNO=errno_name, IOFAULT_LOG=log)
    try:
        return subprocess.run([f"{bin_dir}/fetchd", "--once", "--config", f"{work}/etc/fetchd.toml",
                               "--cache-dir", f"{work}/cache", "--state-dir", f"{work}/state", "--runtime-dir", f"{work}/run"],
                              capture_output=True, text=True, env=env, timeout=120)
    except subprocess.TimeoutExpired as expired:
        return expired


def violations(work, run, history_before, errno_name=None, expect_all_new=False):
    """What is wrong after `run` (a CompletedProcess), as a list of sentences."""
    found = []
    if isinstance(run, subprocess.TimeoutExpired):
        return ["fetchd --once did not end within 120 s"]
    output = run.stdout + run.stderr
    if run.returncode < 0:
        found.append(f"fetchd was killed by signal {-run.returncode}")
    elif run.returncode not in (0, 1, 75, 78):
        found.append(f"exit status {run.returncode}")
    if "Fatal error" in output:
        found.append("a Swift fatal error")
    found += torn_snapshots(f"{work}/cache", HANDLERS)
    database = f"{work}/state/state.sqlite"
    logged = RESULT_LINE.findall(run.stderr)
    if os.path.exists(database):
        db = sqlite3.connect(database)
        try:
            integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
            if integrity != "ok":
                found.append(f"integrity_check: {integrity}")
            rows = db.execute("SELECT handler, result, reason FROM fetch_history ORDER BY id").fetchall()
        except sqlite3.DatabaseError as error:
            found.append(f"the state database cannot be read: {error}")
            rows = []
        finally:
            db.close()
        # This run's rows are those after the ones it started with.
        stored = sorted((handler, result) for handler, result, _ in rows[history_before:])
        if sorted(logged) != stored:
            found.append(f"logged {sorted(logged)}, but the database has {stored}")
        # A fetch the fault made fail says why, in the errno's words.
        for handler, result, reason in rows[history_before:]:
            if result == "failed" and errno_name and MEANING[errno_name] not in (reason or ""):
                found.append(f"{handler} failed without saying {MEANING[errno_name]!r}: {reason}")
    if expect_all_new:
        if run.returncode != 0 or sorted(name for name, result in logged if result == "newData") != sorted(HANDLERS):
            found.append(f"the fault gone, not every handler fetched new data: {logged}, exit {run.returncode}")
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--shim", help="a built iofault.so (default: Tests/Torture/iofault.c, compiled here)")
    parser.add_argument("--errno", action="append", choices=sorted(MEANING), help="default: all three")
    parser.add_argument("--every", type=int, default=1, help="test every Nth fault point (1: all)")
    args = parser.parse_args()
    errnos = args.errno or sorted(MEANING)
    root = tempfile.mkdtemp(prefix="fetchd-io-fault-")
    shim = args.shim or build_shim(SHIM, root)
    global PAGE
    PAGE = f"{root}/page.txt"
    base = f"{root}/base"
    write_config(base, PAGE)
    first = run_once(args.bin_dir, base)
    if first.returncode != 0:
        sys.exit(f"the clean first run failed ({first.returncode}): {first.stderr[-2000:]}")
    history_before = history_count(base)
    counting = f"{root}/count"
    shutil.copytree(base, counting, symlinks=True)
    run_once(args.bin_dir, counting, shim, 0, log=f"{root}/count.log")
    points = [line.split(" ", 2) for line in open(f"{root}/count.log").read().splitlines()]
    print(f"{len(points)} fault points in a wake of 3 handlers "
          f"({', '.join(f'{n} {c}' for c, n in sorted(count_calls(points).items()))})")
    tested = injected = 0
    outcomes = {}
    for index, (number, call, path) in enumerate(points):
        if index % args.every:
            continue
        # A sample (every Nth point) takes one errno per point, in turn; the whole run takes all.
        for errno_name in [errnos[(index // args.every) % len(errnos)]] if args.every > 1 else errnos:
            work = f"{root}/run"
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work, symlinks=True)
            log = f"{root}/fault.log"
            if os.path.exists(log):
                os.remove(log)
            run = run_once(args.bin_dir, work, shim, int(number), errno_name, log)
            tested += 1
            fault = [line for line in open(log).read().splitlines() if line.startswith("FAIL")] if os.path.exists(log) else []
            failed = fault[0].split(" ", 4) if fault else None
            what = f"{failed[2]} {failed[3].replace(work, '')}" if failed else "no call: the wake made fewer"
            where = f"point {number} ({what}) failing with {errno_name}"
            problems = violations(work, run, history_before, errno_name)
            if fault:
                injected += 1
                output = run.stdout + run.stderr if not isinstance(run, subprocess.TimeoutExpired) else ""
                outcome = ("a fetch failed, saying why" if re.search(r"\] \S+: failed: .*" + MEANING[errno_name], output)
                           else "fetchd did not start, saying why" if run.returncode in (1, 78) and "3 fetches" not in output
                           else "every fetch recorded; fetchd warned" if re.search(r" (warning|error) fetchd: ", output)
                           else "no effect seen (a read or an advisory write)")
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
            if not problems:
                rows = history_count(work)
                again = run_once(args.bin_dir, work)
                problems = [f"after the fault: {p}" for p in violations(work, again, rows, expect_all_new=True)]
            if problems:
                print(f"VIOLATION at {where}:")
                for problem in problems:
                    print(f"  {problem}")
                tail = (run.stdout + run.stderr)[-3000:] if not isinstance(run, subprocess.TimeoutExpired) else ""
                print(f"  fetchd said:\n{tail}\n  folder kept: {work}")
                sys.exit(1)
    print(f"I/O faults: {tested} faulted wakes, {injected} with the fault injected, 0 violations "
          f"(no crash, no torn snapshot, database intact, nothing logged and lost, every handler fetched after)")
    for outcome, count in sorted(outcomes.items(), key=lambda item: -item[1]):
        print(f"  {count:4d}  {outcome}")
    shutil.rmtree(root, ignore_errors=True)


def count_calls(points):
    counts = {}
    for _, call, _ in points:
        counts[call] = counts.get(call, 0) + 1
    return counts


if __name__ == "__main__":
    main()
