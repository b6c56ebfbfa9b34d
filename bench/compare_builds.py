#!/usr/bin/env python3
"""Two release builds of fetchd compared in one session (`make bench-compare OLD=REF`).

The old build and the new one take turns, run by run, so that the machine's drift (these
machines are noisy) falls on both alike: `--runs` runs each of bench/http_bench.py --repeat 1
(files on $BENCH_DIR, tmpfs for the figures bench/README.md quotes) and bench/config_bench.py
--repeat 1, and `--idle-runs` runs each of bench/idle_bench.py --seconds `--idle-seconds`. Each
bench's own ratio is against its peer measured in the same run (curl --parallel, tomllib, the
anchor 0 of wake-ups). The results file holds every run and, under "medians", what the tables
of bench/README.md quote: per build the median ratios, the µs per fetch or handler, and the
range of the per-run CPU ratios.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_json(command):
    """Runs a bench script with `--json FILE` appended and returns what it wrote."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        path = handle.name
    try:
        subprocess.run(command + ["--json", path], check=True, stdout=sys.stderr)
        with open(path) as file:
            return json.load(file)
    finally:
        os.unlink(path)


def http(bin_dir, counts):
    return run_json([sys.executable, os.path.join(HERE, "http_bench.py"), "--bin-dir", bin_dir, "--repeat", "1",
                     "-n", *map(str, counts)])


def config(bin_dir, counts):
    return run_json([sys.executable, os.path.join(HERE, "config_bench.py"), "--fetchd", os.path.join(bin_dir, "fetchd"),
                     "--repeat", "1", "-n", *map(str, counts)])


def idle(bin_dir, seconds):
    return run_json([sys.executable, os.path.join(HERE, "idle_bench.py"), "--fetchd", os.path.join(bin_dir, "fetchd"),
                     "--seconds", str(seconds)])


def thread_medians(rows, n):
    """Each thread's CPU a fetch (µs), the median over the runs (`fetchd --once`'s `threads:`
    line; every fetchd run of a row's repeats counts)."""
    spent = {}
    for row in rows:
        for line in row["fetchd_threads"]:
            for name, milliseconds in re.findall(r"([\w.-]+) (\d+) ms", line):
                spent.setdefault(name, []).append(1000 * int(milliseconds) / n)
    return {name: statistics.median(values) for name, values in spent.items() if len(values) * 2 > len(rows)}


def medians(results, counts):
    """What bench/README.md quotes, per build."""
    summary = {}
    for side in ("old", "new"):
        http_runs = results["http"][side]
        side_summary = {"http": {}, "config": {}, "idle": {}}
        for n in map(str, counts):
            rows = [run["runs"][n] for run in http_runs]
            cpu_ratios = [row["cpu_ratio"] for row in rows]
            side_summary["http"][n] = {
                "wall_ratio": statistics.median(row["wall_ratio"] for row in rows),
                "cpu_ratio": statistics.median(cpu_ratios),
                "cpu_ratio_range": [min(cpu_ratios), max(cpu_ratios)],
                "fetchd_cpu_us_per_fetch": statistics.median(1e6 * row["fetchd_wake_cpu_s"] / int(n) for row in rows),
                "peak_rss_mib": statistics.median(row["fetchd_peak_rss_mib"] for row in rows),
            }
            # Issue 44's target (fetchd's CPU a fetch against curl's plus the floor's) and the
            # wake's anonymous peak, where the runs have them (builds of before that print none).
            if all("cpu_floor_ratio" in row for row in rows):
                floor_ratios = [row["cpu_floor_ratio"] for row in rows]
                side_summary["http"][n]["cpu_floor_ratio"] = statistics.median(floor_ratios)
                side_summary["http"][n]["cpu_floor_ratio_range"] = [min(floor_ratios), max(floor_ratios)]
            anonymous = [row.get("fetchd_peak_anonymous_mib") for row in rows]
            if all(anonymous):
                side_summary["http"][n]["peak_anonymous_mib"] = statistics.median(anonymous)
            side_summary["http"][n]["thread_us_per_fetch"] = thread_medians(rows, int(n))
            config_rows = [row for run in results["config"][side] for row in run["rows"] if str(row["n"]) == n]
            side_summary["config"][n] = {
                "cpu_ratio": statistics.median(row["cpu_ratio"] for row in config_rows),
                "fetchd_cpu_us_per_handler": statistics.median(1e6 * row["fetchd_cpu_s"] / int(n) for row in config_rows),
            }
        idle_runs = results["idle"][side]
        if not idle_runs:  # --idle-runs 0
            summary[side] = side_summary
            continue
        side_summary["idle"] = {
            "wakeups_per_minute_each_run": [run["wakeups_per_minute"] for run in idle_runs],
            "rss_mib": statistics.median(run["rss_kib"] for run in idle_runs) / 1024,
            "anonymous_mib": statistics.median(run["anonymous_kib"] for run in idle_runs) / 1024,
        }
        summary[side] = side_summary
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--medians", metavar="FILE", help="only print the medians of a results file's runs again")
    parser.add_argument("--old-bin", help="folder holding the old build's fetchd")
    parser.add_argument("--new-bin", help="folder holding the new build's fetchd")
    parser.add_argument("--old-name", default="old", help="what the old build is (a commit)")
    parser.add_argument("--new-name", default="new", help="what the new build is (a commit)")
    parser.add_argument("-n", type=int, nargs="+", default=[1000, 10000], help="handler counts")
    parser.add_argument("--runs", type=int, default=5, help="runs each of the http and config benches")
    parser.add_argument("--idle-runs", type=int, default=3)
    parser.add_argument("--idle-seconds", type=float, default=60)
    parser.add_argument("--json", help="write the results here (needed unless --medians)")
    args = parser.parse_args()
    if args.medians:
        with open(args.medians) as file:
            results = json.load(file)
        counts = sorted({int(n) for run in results["http"]["old"] for n in run["runs"]})
        print(json.dumps(medians(results, counts), indent=1))
        return
    if not (args.old_bin and args.new_bin and args.json):
        parser.error("--old-bin, --new-bin and --json name the builds to compare and where the results go")
    builds = {"old": args.old_bin, "new": args.new_bin}
    results = {"date": time.strftime("%Y-%m-%d"), "old": args.old_name, "new": args.new_name,
               "note": f"old and new release builds alternating in one session: {args.runs} runs each of "
                       f"http_bench.py --repeat 1 (files on {os.environ.get('BENCH_DIR', '/var/tmp')}) and "
                       f"config_bench.py --repeat 1, {args.idle_runs} of idle_bench.py --seconds {args.idle_seconds}",
               "http": {"old": [], "new": []}, "config": {"old": [], "new": []}, "idle": {"old": [], "new": []}}
    for run in range(args.runs):
        for side in ("old", "new") if run % 2 == 0 else ("new", "old"):
            print(f"run {run + 1}/{args.runs}: {side}", file=sys.stderr, flush=True)
            results["http"][side].append(http(builds[side], args.n))
            results["config"][side].append(config(builds[side], args.n))
    for run in range(args.idle_runs):
        for side in ("old", "new") if run % 2 == 0 else ("new", "old"):
            results["idle"][side].append(idle(builds[side], args.idle_seconds))
    results["medians"] = medians(results, args.n)
    with open(args.json, "w") as file:
        json.dump(results, file, indent=1)
        file.write("\n")
    print(json.dumps(results["medians"], indent=1))


if __name__ == "__main__":
    main()
