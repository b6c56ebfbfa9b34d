#!/usr/bin/env python3
"""The peak anonymous memory of `fetchd --once` on make bench-http's configuration, from outside.

For builds that do not report it themselves (`fetchd --once` prints `peak anonymous` since issue
44): nginx serves N files as in bench/http_bench.py, each build runs one wake of N due http
handlers, and this script reads `/proc/PID/statm` every half millisecond while it runs (resident
less shared pages: the anonymous memory, as `smaps_rollup`'s `Anonymous` counts it). Builds take
turns, run by run; the medians are printed, per build and N.

Usage: anonymous_peak.py --bin-dir DIR [--bin-dir DIR ...] [-n 1000 10000] [--runs 3]
"""
import argparse, os, shutil, statistics, subprocess, tempfile, time

import http_bench


def peak_mib(binary, folder, work):
    """Runs one wake; returns the highest anonymous memory seen, in MiB."""
    run = os.path.join(work, "fetchd-run")
    shutil.rmtree(run, ignore_errors=True)
    process = subprocess.Popen([binary, "--once", "--config", os.path.join(folder, "fetchd.toml"),
                                "--cache-dir", run + "/cache", "--state-dir", run + "/state",
                                "--runtime-dir", run + "/run", "--log-level", "warning"], stdout=subprocess.DEVNULL)
    page, peak = os.sysconf("SC_PAGE_SIZE"), 0
    while process.poll() is None:
        try:
            with open(f"/proc/{process.pid}/statm") as statm:
                fields = statm.read().split()
            peak = max(peak, (int(fields[1]) - int(fields[2])) * page)
        except (OSError, IndexError):
            pass  # the process is going
        time.sleep(0.0005)
    if process.returncode != 0:
        raise SystemExit(f"{binary} --once failed ({process.returncode})")
    return peak / 2**20


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin-dir", action="append", required=True, help="a folder holding a fetchd build")
    parser.add_argument("-n", type=int, nargs="+", default=[1000, 10000], help="handler counts")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="fetchd-anonymous-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    os.chmod(work, 0o755)  # nginx's workers run as an unprivileged user
    nginx, port = http_bench.start_nginx(work, max(args.n))
    try:
        for n in args.n:
            folder = http_bench.fetchd_config(work, n, port, 32)
            peaks = {directory: [] for directory in args.bin_dir}
            for run in range(args.runs):
                for directory in args.bin_dir if run % 2 == 0 else reversed(args.bin_dir):
                    peaks[directory].append(peak_mib(os.path.join(directory, "fetchd"), folder, work))
            for directory, values in peaks.items():
                print(f"N={n:>6} {directory}: peak anonymous {statistics.median(values):.1f} MiB "
                      f"(runs {', '.join(f'{v:.1f}' for v in values)})", flush=True)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
