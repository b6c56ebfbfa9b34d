#!/usr/bin/env python3
"""make bench-config: loading a configuration of N handlers against Python's tomllib, same run.

What a start and every `systemctl reload fetchd` pay before anything else: fetchd reads
fetchd.toml and every file in handlers.d, checks every key, and builds its handlers.
`fetchd --check-config` runs exactly that loader and exits. The anchor is `python3` parsing the
same files with tomllib (parsing only: no key is checked), as a whole process like fetchd's.

Each handler is in a file of its own, as packages drop them into handlers.d, and sets the keys a
real one does: an http handler with a deadline, retention, usage learning and conditions. Runs
alternate and repeat; the medians of CPU time (user + system) and the ratio fetchd / tomllib are
printed, and written as JSON with --json FILE.

    bench/config_bench.py --fetchd .build/release/fetchd [-n 1000 10000] [--repeat 5] [--json OUT]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

ANCHOR = """
import pathlib, sys, tomllib
root = pathlib.Path(sys.argv[1])
tomllib.loads((root / "fetchd.toml").read_text())
for path in sorted((root / "handlers.d").glob("*.toml")):
    tomllib.loads(path.read_text())
"""


def write_config(folder, n):
    """fetchd.toml and n handler files under `folder`."""
    os.makedirs(os.path.join(folder, "handlers.d"))
    with open(os.path.join(folder, "fetchd.toml"), "w") as f:
        f.write('http_max_transfers = 32\nmax_concurrent = 4\ncache_max_bytes = 1073741824\n')
    for i in range(n):
        with open(os.path.join(folder, "handlers.d", f"h{i:05d}.toml"), "w") as f:
            f.write(f'[[handler]]\nname = "h{i:05d}"\nkind = "http"\n'
                    f'url = "https://example.net/feeds/{i:05d}.xml"\n'
                    f'min_interval = "{15 + i % 45}m"\ndeadline = "30s"\nretain = 3\nmax_bytes = 1048576\n'
                    f'usage = ["reads", "session"]\nbudget = "12/day"\nlead = "10m"\nnetwork = "unmetered"\nbattery_min = 20\n')


def cpu_of(argv):
    """CPU seconds (user + system) of running argv to its end; exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(argv, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{argv[0]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fetchd", required=True, help="the fetchd binary (a release build)")
    parser.add_argument("-n", type=int, nargs="+", default=[1000, 10000], help="handler counts")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="fetchd-bench-config-") as work:
        for n in args.n:
            folder = os.path.join(work, f"config-{n}")
            write_config(folder, n)
            fetchd, anchor = [], []
            for _ in range(args.repeat):
                fetchd.append(cpu_of([args.fetchd, "--check-config", "--config", os.path.join(folder, "fetchd.toml")]))
                anchor.append(cpu_of([sys.executable, "-c", ANCHOR, folder]))
            row = {"n": n, "repeat": args.repeat, "fetchd_cpu_s": statistics.median(fetchd),
                   "tomllib_cpu_s": statistics.median(anchor)}
            row["cpu_ratio"] = row["fetchd_cpu_s"] / row["tomllib_cpu_s"]
            rows.append(row)
            print(f"N={n:6d}: fetchd --check-config CPU {row['fetchd_cpu_s']:.3f} s vs tomllib {row['tomllib_cpu_s']:.3f} s "
                  f"(ratio {row['cpu_ratio']:.2f}; {1e6 * row['fetchd_cpu_s'] / n:.0f} vs "
                  f"{1e6 * row['tomllib_cpu_s'] / n:.0f} us per handler)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bench": "config", "median_of": args.repeat, "rows": rows}, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
