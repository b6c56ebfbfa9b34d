#!/usr/bin/env python3
"""Resource exhaustion (issue 7), each part against a real fetchd:
  many    N handlers configured (10,000): fetchd starts, status lists them all, and the wake
          that runs the scheduled ones (`--scheduled`, default all) stays within max_concurrent;
  fork    a handler that forks 1,000 children and waits (stopped at its deadline) and one that
          forks 1,000 and exits at once: every child is gone afterwards, fetchd and a
          neighbouring handler carry on;
  spew    handlers printing without end on stdout and on stderr: fetchd's memory stays bounded,
          they end at their deadline, and a failure's reason keeps only a short tail;
  nofile  fetchd's RLIMIT_NOFILE lowered (prlimit) to leave it one free descriptor: a fetch fails
          naming "Too many open files", fetchd keeps answering, and all is well once it is raised.

    python3 Tests/Torture/exhaustion_torture.py --bin-dir .build/debug many --handlers 10000
"""
import argparse, json, os, random, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from datetime import datetime
from torture_common import Daemon, fail, fd_count, rss_kib, threads, wait_until

OK_HANDLER = ('[[handler]]\nname = "ok"\nkind = "exec"\nmin_interval = "1s"\n'
              'command = ["/bin/sh", "-c", "date +%s.%N > \\"$FETCHD_OUTPUT\\""]\n\n')


def last_fetch(daemon, name):
    result = daemon.fetchctl("history", name, "--json", timeout=60)
    if result is None or result.returncode != 0:
        fail(f"history {name} did not answer")
    entries = json.loads(result.stdout)
    entries = entries.get("entries", entries) if isinstance(entries, dict) else entries
    return entries[0] if entries else None


def ok_fetches(daemon):
    return sum(1 for line in daemon.log_text().splitlines() if "ok: newData" in line)


def expect_neighbour_fetches(daemon, since, more=0, label=""):
    """Fails unless the neighbouring handler "ok" fetched more than `since + more` times within 20 s."""
    if not wait_until(lambda: ok_fetches(daemon) > since + more, 20):
        fail(f"{label}the neighbouring handler stopped fetching")


def stop_cleanly(daemon):
    if daemon.stop() != 0:
        fail("fetchd did not exit cleanly")


def many(args):
    count, scheduled, limit = args.handlers, min(args.scheduled or args.handlers, args.handlers), 4
    runs = "RUNS"
    text = "".join(
        f'[[handler]]\nname = "m{i:05d}"\nkind = "exec"\nmin_interval = "{"1h" if i < scheduled else "never"}"\n'
        f'command = ["/bin/sh", "-c", "echo s $(date +%s.%N) >> {runs}; sleep 0.01; echo e $(date +%s.%N) >> {runs}; exit 100"]\n\n'
        for i in range(count))
    # The default heartbeat (60 s): at 1 s, every beat re-reads all 10,000 states a few times.
    daemon = Daemon(args.bin_dir, "many", main=f'max_concurrent = {limit}', heartbeat="60s")
    daemon.write_handlers(text.replace(runs, f"{daemon.work}/runs.log"))
    began = time.monotonic()
    daemon.start(timeout=300, arguments=["--log-level", "debug"])  # debug: each wake logs what it took
    ready = time.monotonic() - began
    status = daemon.status(timeout=120)
    if len(status["handlers"]) != count:
        fail(f"status lists {len(status['handlers'])} handlers, {count} configured")
    peak_rss, peak_threads, peak_fds = 0, 0, 0

    def done():
        nonlocal peak_rss, peak_threads, peak_fds
        peak_rss, peak_threads = max(peak_rss, rss_kib(daemon.pid)), max(peak_threads, threads(daemon.pid))
        peak_fds = max(peak_fds, fd_count(daemon.pid))
        with open(f"{daemon.work}/runs.log") as f:
            return sum(1 for line in f if line.startswith("e ")) >= scheduled
    if not wait_until(done, args.timeout, interval=1):
        fail(f"the wake did not run all {scheduled} scheduled handlers within {args.timeout} s")
    wake = time.monotonic() - began - ready
    edges = []
    with open(f"{daemon.work}/runs.log") as f:
        for line in f:
            kind, when = line.split()
            edges.append((float(when), 1 if kind == "s" else -1))
    most = current = 0
    for _, step in sorted(edges):
        current += step
        most = max(most, current)
    if most > limit:
        fail(f"{most} handlers ran at once, max_concurrent is {limit}")
    # Each due handler is taken by one wake: a wake that began while an earlier one was still
    # handing out its handlers must not take them again (nor hold its own copy of them all).
    taken = [int(line.split("wake: ")[1].split()[0]) for line in daemon.log_text().splitlines()
             if "wake: " in line and " handler(s) due" in line]
    if sum(taken) != scheduled:
        fail(f"{len(taken)} wakes took {sum(taken)} handlers in all, {scheduled} were due")
    status = daemon.status(timeout=120)
    ran = sum(1 for h in status["handlers"] if h.get("last_result"))
    if ran != scheduled:
        fail(f"{ran} handlers have a result, {scheduled} were due")
    stop_cleanly(daemon)
    print(f"many handlers: {count} configured, {scheduled} due at start; ready in {ready:.1f} s; status lists all "
          f"{count}; {len(taken)} wake(s) took them; they ran in {wake:.0f} s, at most {most} at once (max_concurrent {limit}); "
          f"peak RSS {peak_rss // 1024} MiB, peak {peak_threads} threads, peak {peak_fds} fds")
    daemon.remove()


def processes_with(marker):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def fork(args):
    seconds = random.randint(90000, 99999)
    spawn = f'i=0; while [ $i -lt {args.children} ]; do sleep {seconds} & i=$((i+1)); done'
    daemon = Daemon(args.bin_dir, "fork", handlers=OK_HANDLER + (
        f'[[handler]]\nname = "waiter"\nkind = "exec"\nmin_interval = "never"\ndeadline = "8s"\n'
        f'command = ["/bin/sh", "-c", "{spawn}; wait"]\n\n'
        f'[[handler]]\nname = "leaver"\nkind = "exec"\nmin_interval = "never"\ndeadline = "30s"\n'
        f'command = ["/bin/sh", "-c", "{spawn}; echo done > \\"$FETCHD_OUTPUT\\""]\n'))
    daemon.start()
    marker = f"sleep\0{seconds}"
    for name, expected in (("waiter", "expired"), ("leaver", "newData")):
        before = ok_fetches(daemon)
        result = daemon.fetchctl("fetch", name, "--wait", timeout=120)
        if result is None or not result.stdout.startswith(f"{name}: {expected}"):
            fail(f"{name}: expected {expected}, got {result and (result.stdout + result.stderr)}")
        if not wait_until(lambda: not processes_with(marker), 20):
            fail(f"{name}: {len(processes_with(marker))} of its children still alive 20 s after the fetch ended")
        expect_neighbour_fetches(daemon, before, more=1, label=f"{name}: ")
    fds, threads_now = fd_count(daemon.pid), threads(daemon.pid)
    stop_cleanly(daemon)
    print(f"fork: 2 handlers each forked {args.children} children (one waited until its deadline: expired; "
          f"one exited at once: newData); none of the {2 * args.children} outlived its fetch; the neighbour "
          f"went on fetching; fetchd then held {fds} fds, {threads_now} threads")
    daemon.remove()


def spew(args):
    daemon = Daemon(args.bin_dir, "spew", handlers=OK_HANDLER + (
        f'[[handler]]\nname = "stdout"\nkind = "exec"\nmin_interval = "never"\ndeadline = "{args.seconds}s"\n'
        'command = ["/usr/bin/yes", "a line on stdout, without end"]\n\n'
        f'[[handler]]\nname = "stderr"\nkind = "exec"\nmin_interval = "never"\ndeadline = "{args.seconds}s"\n'
        'command = ["/bin/sh", "-c", "yes a line on stderr >&2"]\n\n'
        '[[handler]]\nname = "loud-failure"\nkind = "exec"\nmin_interval = "never"\n'
        'command = ["/bin/sh", "-c", "yes 50 MB of noise | head -c 50000000; echo the real reason; exit 3"]\n'))
    daemon.start()
    time.sleep(1)
    baseline, peak = rss_kib(daemon.pid), 0
    procs = [subprocess.Popen([f"{args.bin_dir}/fetchctl", "fetch", name, "--wait", "--socket", daemon.socket],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for name in ("stdout", "stderr", "loud-failure")]
    while any(p.poll() is None for p in procs):
        peak = max(peak, rss_kib(daemon.pid))
        time.sleep(0.2)
    outputs = [p.stdout.read() for p in procs]
    for name, output in zip(("stdout", "stderr"), outputs):
        if not output.startswith(f"{name}: expired"):
            fail(f"{name}: expected expired at its deadline, got {output}")
    failure = last_fetch(daemon, "loud-failure")
    reason = (failure or {}).get("reason") or ""
    if "the real reason" not in reason or len(reason) > 4096:
        fail(f"loud-failure: reason should end with its last line and stay short, got {len(reason)} characters")
    # Not under AddressSanitizer (`make test-asan`): its quarantine keeps up to 256 MiB of freed
    # output buffers resident by design, so RSS measures the sanitizer; the rest is still checked.
    if peak - baseline > 64 * 1024 and os.environ.get("FETCHD_SANITIZER") != "address":
        fail(f"fetchd grew by {peak - baseline} KiB while handlers printed without end")
    expect_neighbour_fetches(daemon, ok_fetches(daemon))
    stop_cleanly(daemon)
    print(f"spew: 2 handlers printed without end for {args.seconds} s (stdout, stderr) and one printed 50 MB then "
          f"failed; RSS {baseline // 1024} MiB before, peak {peak // 1024} MiB ({(peak - baseline) // 1024:+d} MiB); "
          f"the failure's reason is {len(reason)} characters and ends \"{reason[-40:]}\"")
    daemon.remove()


BUSY_HANDLERS = [f"busy{i}" for i in range(8)]


def limit_leaving(pid, spare):
    """The soft RLIMIT_NOFILE under which fetchd can open just `spare` more descriptors.

    The limit bounds the NUMBER a new descriptor gets, not how many are open: descriptors closed
    while higher ones stay open leave holes below the highest, and "open descriptors + spare"
    then leaves room for more than `spare` (with holes at 20, 21 and 25 under 30, the probe's
    fetch got its pipe 20 times in a row). So: the highest limit with exactly `spare` free
    numbers under it (descriptors above it stay open; only new ones are refused)."""
    used = {int(name) for name in os.listdir(f"/proc/{pid}/fd")}
    limit, free = 0, 0
    while True:
        if limit not in used:
            if free == spare:
                return limit  # one more number would be one more free
            free += 1
        limit += 1


def storm(daemon, original, seconds, aborts):
    """Keeps the limit at 0 to 6 free descriptors for fetchd for `seconds` while the busy
    handlers (due every second, eight at once) start their programs, then raises it again: some
    get their output pipe, some fail with EMFILE, their commits and the neighbour's compete for
    the rest. When fetchd started programs with swift-subprocess 1.0.2, spawns at the edge crashed
    it (a descriptor the library dropped unclosed: fatalError) or left a handler running for good
    (its pidfd could not be opened, so the library never saw the program exit). Returns the
    wall-clock time the storm ended."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        lowered = limit_leaving(daemon.pid, random.randint(0, 6))
        subprocess.run(["prlimit", f"--pid={daemon.pid}", f"--nofile={lowered}:"], check=True)
        time.sleep(0.5)
        survive_or_explain(daemon, f"storm (limit {lowered})", aborts)
    subprocess.run(["prlimit", f"--pid={daemon.pid}", f"--nofile={original}:"], check=True)
    return time.time()


def expect_busy_handlers_recover(daemon, since):
    """Fails unless every busy handler started a fetch after `since` (a Unix time) within 20 s,
    its deadline (5 s) and more: none may be stuck in a fetch that never ends."""
    def attempts():
        handlers = {h["name"]: h for h in daemon.status()["handlers"]}
        return {name: datetime.fromisoformat(handlers[name]["last_attempt_at"].replace("Z", "+00:00")).timestamp()
                for name in BUSY_HANDLERS if handlers[name].get("last_attempt_at")}
    if not wait_until(lambda: all(attempts().get(name, 0) > since for name in BUSY_HANDLERS), 20, interval=0.5):
        stuck = {h["name"]: h.get("last_attempt_at") for h in daemon.status()["handlers"]
                 if h["name"] in BUSY_HANDLERS and attempts().get(h["name"], 0) <= since}
        fail(f"after the limit was raised again these handlers never fetched again (stuck running?): {stuck}")


# libdispatch's worker-pool monitor (swift-corelibs-libdispatch, src/event/workqueue.c) wakes once a
# second while work is queued and opens /proc/<tid>/stat for each worker thread; when that open fails
# it aborts the process (DISPATCH_CLIENT_CRASH "workq: registered worker exited prematurely"). Any
# Swift program whose tasks run on Dispatch, as fetchd's do, can be stopped this way at its
# descriptor limit, whatever its own code does. Such an abort is counted and fetchd restarted, as
# systemd would; any other crash fails the run.
DISPATCH_MONITOR = "_dispatch_workq_monitor_pools"


def survive_or_explain(daemon, where, aborts):
    """After a round: nothing when fetchd lives; when it died of libdispatch's monitor (its core
    dump says so), counts it and restarts fetchd; otherwise fails the run."""
    if daemon.alive():
        return
    frames = daemon.crash_frames()
    if frames is None or DISPATCH_MONITOR not in frames:
        fail(f"{where}: fetchd died; see {daemon.log_path}" + (f"\n{frames}" if frames else " (no core dump to read)"))
    aborts.append(where)
    daemon.start(cores=True)


def nofile(args):
    busy = "".join(f'[[handler]]\nname = "{name}"\nkind = "exec"\nmin_interval = "1s"\ndeadline = "5s"\n'
                   'command = ["/bin/sh", "-c", "date +%s.%N > \\"$FETCHD_OUTPUT\\""]\n\n' for name in BUSY_HANDLERS)
    daemon = Daemon(args.bin_dir, "nofile", main="max_concurrent = 8", handlers=OK_HANDLER + busy + (
        '[[handler]]\nname = "probe"\nkind = "exec"\nmin_interval = "never"\n'
        'command = ["/bin/sh", "-c", "date +%s%N > \\"$FETCHD_OUTPUT\\""]\n'))
    daemon.start(cores=True)
    aborts = []
    time.sleep(1)
    original = subprocess.run(["prlimit", f"--pid={daemon.pid}", "--nofile", "--raw", "--noheadings", "-o", "SOFT"],
                              capture_output=True, text=True, check=True).stdout.strip()
    # At the limit a fetch must fail naming EMFILE. A fetch needs two descriptors (its output
    # pipe) and the busy handlers' pipes come and go, so what fetchd holds at one moment may be
    # freed by the next: asked up to 20 times, one answer must name it.
    for attempt in range(20):
        held = fd_count(daemon.pid)
        limit = limit_leaving(daemon.pid, args.spare)
        # The soft limit only: lowering the hard one could not be undone without CAP_SYS_RESOURCE.
        subprocess.run(["prlimit", f"--pid={daemon.pid}", f"--nofile={limit}:"], check=True)
        result = daemon.fetchctl("fetch", "probe", "--wait", timeout=60)
        answer = result and (result.stdout + result.stderr).strip()
        if result is not None and "Too many open files" in answer:
            break
        subprocess.run(["prlimit", f"--pid={daemon.pid}", f"--nofile={original}:"], check=True)
        time.sleep(0.2)
    else:
        fail(f"with the limit at what fetchd held, 20 fetches never failed naming EMFILE; the last: {answer}")
    ping = daemon.fetchctl("ping", timeout=30)
    if ping is None or ping.returncode != 0:
        fail("fetchd stopped answering at the lowered limit")
    subprocess.run(["prlimit", f"--pid={daemon.pid}", f"--nofile={original}:"], check=True)
    # Then rounds at a random limit, 0 to 24 descriptors free, each for a timer fetch or two
    # of the neighbour and an asked-for one: fetchd must live through every one.
    outcomes = {}
    for number in range(args.rounds):
        lowered = limit_leaving(daemon.pid, random.randint(0, 24))
        subprocess.run(["prlimit", f"--pid={daemon.pid}", f"--nofile={lowered}:"], check=True)
        result = daemon.fetchctl("fetch", "probe", "--wait", timeout=5)
        word = "no answer" if result is None or not result.stdout else result.stdout.split()[1]
        outcomes[word] = outcomes.get(word, 0) + 1
        time.sleep(0.5)
        subprocess.run(["prlimit", f"--pid={daemon.pid}", f"--nofile={original}:"], check=True)
        survive_or_explain(daemon, f"round {number + 1} (limit {lowered})", aborts)
    recovered = daemon.fetchctl("fetch", "probe", "--wait", timeout=60)
    if recovered is None or not recovered.stdout.startswith("probe: newData"):
        fail(f"with the limit raised again the fetch should work, got {recovered and recovered.stdout}")
    expect_neighbour_fetches(daemon, ok_fetches(daemon))
    ended = storm(daemon, original, args.storm_seconds, aborts)
    expect_busy_handlers_recover(daemon, ended)
    stop_cleanly(daemon)
    print(f"nofile: fetchd held {held} fds; RLIMIT_NOFILE lowered to {limit} ({args.spare} free): the fetch failed with "
          f"\"{answer[:160]}\", fetchd answered; {args.rounds} rounds at random limits (fetch outcomes: {outcomes}) "
          f"survived; raised again: the fetch succeeded and the neighbour went on; {args.storm_seconds} s of "
          f"{len(BUSY_HANDLERS)} handlers starting at the edge of the limit: every one fetched again after it; "
          f"libdispatch aborts (its worker monitor could not open /proc, read from the core dump), fetchd restarted: "
          f"{len(aborts)}{' (' + ', '.join(aborts) + ')' if aborts else ''}")
    daemon.remove()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parts = parser.add_subparsers(dest="part", required=True)
    part = parts.add_parser("many")
    part.add_argument("--handlers", type=int, default=10000)
    part.add_argument("--scheduled", type=int, default=0, help="how many are due (default: all)")
    part.add_argument("--timeout", type=int, default=1800)
    parts.add_parser("fork").add_argument("--children", type=int, default=1000)
    parts.add_parser("spew").add_argument("--seconds", type=int, default=5)
    part = parts.add_parser("nofile")
    # 1: room for fetchctl's connection only. A fetch needs two descriptors of fetchd's (its
    # output pipe; the commit's files are opened one at a time).
    part.add_argument("--spare", type=int, default=1)
    part.add_argument("--rounds", type=int, default=5)
    part.add_argument("--storm-seconds", type=int, default=15)
    args = parser.parse_args()
    {"many": many, "fork": fork, "spew": spew, "nofile": nofile}[args.part](args)


if __name__ == "__main__":
    main()
