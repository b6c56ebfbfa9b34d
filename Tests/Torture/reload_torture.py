#!/usr/bin/env python3
"""Config churn (issue 7): many SIGHUP reloads of random valid and invalid configs while handlers run.

A valid config is a random subset of 30 exec handlers (random min_interval, some running half a
second) plus a handler named after the reload (`g<n>`, never scheduled: the mark that this reload
took effect), and a random max_concurrent in the main file. An invalid one keeps the last valid
files and adds `handlers.d/bad-<n>.toml` with one kind of mistake (TOML syntax, a table header
toml++ aborts on, an unknown key, a bad duration, a wrong type, a duplicate name, a missing
command, bytes that are not UTF-8). After each SIGHUP it waits until `fetchctl status` shows the
reload's outcome (the new mark, or a rejection naming bad-<n>.toml), then checks that the handler
set in force is exactly the last valid config's. Reports resident memory along the run.

    python3 Tests/Torture/reload_torture.py --bin-dir .build/debug --reloads 1000
"""
import argparse, os, random, signal, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torture_common import Daemon, fail, fd_count, rss_kib, wait_until

POOL = [f"p{i:02d}" for i in range(30)]
COMMANDS = ['["/bin/sh", "-c", "exit 100"]', '["/bin/sh", "-c", "sleep 0.5; exit 100"]',
            '["/bin/sh", "-c", "echo x > \\"$FETCHD_OUTPUT\\""]']


def valid_config(rng, generation):
    names = rng.sample(POOL, rng.randint(1, 12))
    text = f'[[handler]]\nname = "g{generation}"\nkind = "exec"\nmin_interval = "never"\ncommand = ["/bin/true"]\n\n'
    for name in names:
        text += (f'[[handler]]\nname = "{name}"\nkind = "exec"\nmin_interval = "{rng.choice(["1s", "2s", "5s", "never"])}"\n'
                 f'deadline = "5s"\ncommand = {rng.choice(COMMANDS)}\n\n')
    return sorted(names + [f"g{generation}"]), text


def invalid_file(rng, pool_name):
    """One file with one mistake (its kind, its bytes)."""
    good = f'[[handler]]\nname = "{pool_name}x"\nkind = "exec"\ncommand = ["/bin/true"]\n'
    kinds = {
        "syntax": f'[[handler]\nname = "{pool_name}"\n',
        "header": "[/x]\nname = 1\n",
        "lone-bracket": "[\n",
        "unknown-key": good + "bogus_key = 1\n",
        "bad-duration": good + 'min_interval = "soon"\n',
        "wrong-type": f'[[handler]]\nname = 5\nkind = "exec"\ncommand = ["/bin/true"]\n',
        "duplicate": good + "\n" + good,
        "no-command": f'[[handler]]\nname = "{pool_name}y"\nkind = "exec"\n',
        "not-utf8": None,
    }
    kind = rng.choice(sorted(kinds))
    data = bytes(rng.randrange(256) for _ in range(200)) if kind == "not-utf8" else kinds[kind].encode()
    return kind, data


def handler_set(status):
    return sorted(h["name"] for h in status["handlers"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--reloads", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    expected, text = valid_config(rng, 0)
    daemon = Daemon(args.bin_dir, "reload", main="max_concurrent = 2", handlers=text)
    daemon.start()
    time.sleep(2)  # warm-up: the first fetches, the database opened
    rss_start = rss_kib(daemon.pid)
    valid = invalid = 0
    kinds, samples, bad_file = {}, [], None
    began = time.monotonic()
    for number in range(1, args.reloads + 1):
        if bad_file:
            os.remove(bad_file)
            bad_file = None
        if rng.random() < 0.5:
            expected, text = valid_config(rng, number)
            daemon.write_main(f"max_concurrent = {rng.randint(1, 4)}")
            daemon.write_handlers(text)
            done = lambda: f"g{number}" in handler_set(daemon.status())
            valid += 1
        else:
            kind, data = invalid_file(rng, rng.choice(POOL))
            kinds[kind] = kinds.get(kind, 0) + 1
            bad_file = f"{daemon.work}/etc/handlers.d/bad-{number}.toml"
            with open(bad_file, "wb") as f:
                f.write(data)
            done = lambda: any(f"bad-{number}.toml" in (p.get("file") or "") and "reload rejected" in p["message"]
                               for p in daemon.status().get("config_problems", []))
            invalid += 1
        os.kill(daemon.pid, signal.SIGHUP)
        if not wait_until(done, 30, interval=0.02):
            fail(f"reload {number}: its outcome never showed in status; see {daemon.log_path}")
        if not daemon.alive():
            fail(f"reload {number}: fetchd died; see {daemon.log_path}")
        in_force = handler_set(daemon.status())
        if in_force != expected:
            fail(f"reload {number}: handlers in force {in_force}, last valid config has {expected}")
        if number % 100 == 0 or number == args.reloads:
            samples.append((number, rss_kib(daemon.pid)))
            print(f"{number} reloads ({valid} valid, {invalid} rejected), RSS {samples[-1][1]} KiB, "
                  f"{fd_count(daemon.pid)} fds; {time.monotonic() - began:.0f} s", flush=True)
    rss_end, fds_end = rss_kib(daemon.pid), fd_count(daemon.pid)
    history = daemon.fetchctl("history", expected[-1], timeout=30)
    status = daemon.stop()
    if status != 0:
        fail(f"fetchd exited with {status} on SIGTERM")
    log = daemon.log_text()
    growth = rss_end - rss_start
    print(f"reload torture: {args.reloads} reloads ({valid} valid, {invalid} rejected: "
          f"{', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}) in {time.monotonic() - began:.0f} s; "
          f"no crash; after every one the handler set in force was the last valid config's; "
          f"{sum(1 for line in log.splitlines() if '(timer)' in line)} timer fetches logged meanwhile; "
          f"RSS {rss_start} KiB after warm-up, {rss_end} KiB at the end ({growth:+d} KiB, "
          f"{growth / args.reloads:+.1f} KiB per reload); {fds_end} fds at the end")
    if history is None or history.returncode != 0:
        fail("history did not answer at the end")
    daemon.remove()


if __name__ == "__main__":
    main()
