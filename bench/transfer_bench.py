#!/usr/bin/env python3
"""make bench-transfer: one background transfer of a 1 GiB file against `curl -o`, same run.

nginx (Debian's) serves one file of SIZE MiB (default 1024) on loopback. fetchd is configured
with one `transfer` handler and runs one wake (`fetchd --once`); curl downloads the same URL
with `curl -o`. Runs alternate and repeat; medians are printed, and written as JSON with --json.

Reported:
- download rate: bytes over the download's own time (libcurl's total time inside fetchd, recorded
  as `download_ms` in the snapshot's meta.json; curl's process wall time) -- the target is
  fetchd >= 0.9x curl;
- end to end: the whole `fetchd --once` (start-up, download, the SHA-256 catching up, publishing
  the snapshot with its syncfs) against curl -o, which neither hashes nor syncs, and against
  `curl -o` followed by `sha256sum` (the same download, verified the usual way);
- progress persistence: fetchd keeps no progress counter to write while downloading (the partial
  file's size is the progress; one small resume record is written per response), so its cost is
  measured as an interruption: fetchd is SIGKILLed half way and run again; the bytes downloaded in
  all and the two runs' time are compared with an uninterrupted run.
"""
import argparse, json, os, re, shutil, signal, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_bench import child_cpu, run_measured, start_nginx  # noqa: E402

def config(work, port, size):
    folder = os.path.join(work, "fetchd-conf")
    os.makedirs(os.path.join(folder, "handlers.d"), exist_ok=True)
    with open(os.path.join(folder, "fetchd.toml"), "w") as f:
        f.write(f"cache_max_bytes = {64 * 1024 ** 3}\n")
    with open(os.path.join(folder, "handlers.d", "bench.toml"), "w") as f:
        f.write(f'[[handler]]\nname = "big"\nkind = "transfer"\nurl = "http://127.0.0.1:{port}/big.bin"\n'
                f'min_interval = "1d"\nmax_bytes = {size + 1}\n')
    return os.path.join(folder, "fetchd.toml")

def fetchd_argv(bin_dir, conf, run):
    return [os.path.join(bin_dir, "fetchd"), "--once", "--config", conf, "--cache-dir", run + "/cache",
            "--state-dir", run + "/state", "--runtime-dir", run + "/run", "--log-level", "warning"]

def meta(run):
    with open(os.path.join(run, "cache", "big", "latest", "meta.json")) as f:
        return json.load(f)

def measure_fetchd(bin_dir, conf, work, size):
    run = os.path.join(work, "fetchd-run")
    shutil.rmtree(run, ignore_errors=True)
    before = child_cpu()
    wall, code, out, err = run_measured(fetchd_argv(bin_dir, conf, run))
    cpu = child_cpu() - before
    if code != 0 or not re.search(r"wake: 1 fetches \(1 new", out):
        sys.exit(f"fetchd --once failed ({code}):\n{out}\n{err[-3000:]}")
    m = meta(run)
    if m["bytes"] != size:
        sys.exit(f"fetchd published {m['bytes']} bytes, expected {size}")
    return {"download_s": int(m["details"]["download_ms"]) / 1000, "process_wall_s": wall, "process_cpu_s": cpu}

def measure_curl(url, work, size):
    out = os.path.join(work, "curl.out")
    before = child_cpu()
    wall, code, _, err = run_measured(["curl", "--silent", "--show-error", "--fail", "-o", out, url])
    if code != 0 or os.path.getsize(out) != size:
        sys.exit(f"curl failed ({code}): {err[-2000:]}")
    cpu = child_cpu() - before
    # The same download verified the usual way: curl -o, then sha256sum.
    hash_wall, code, _, err = run_measured(["sha256sum", out])
    if code != 0:
        sys.exit(f"sha256sum failed ({code}): {err[-2000:]}")
    os.unlink(out)
    return {"wall_s": wall, "cpu_s": cpu, "sha256sum_wall_s": hash_wall, "sha256sum_cpu_s": child_cpu() - before - cpu}

def measure_interrupted(bin_dir, conf, work, size):
    """SIGKILL fetchd once the partial file is half the size, then run it again to the end."""
    run = os.path.join(work, "fetchd-run")
    shutil.rmtree(run, ignore_errors=True)
    partial = os.path.join(run, "cache", "big", ".transfer", "partial")
    start = time.monotonic()
    proc = subprocess.Popen(fetchd_argv(bin_dir, conf, run), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None:
        if os.path.exists(partial) and os.path.getsize(partial) >= size // 2:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    proc.wait()
    kept = os.path.getsize(partial) if os.path.exists(partial) else 0
    wall, code, out, err = run_measured(fetchd_argv(bin_dir, conf, run))
    total = time.monotonic() - start
    if code != 0:
        sys.exit(f"resumed fetchd --once failed ({code}):\n{out}\n{err[-3000:]}")
    m = meta(run)
    downloaded = int(m["details"]["downloaded_bytes"])
    return {"kept_at_kill": kept, "resumed_from": int(m["details"]["resumed_from"]),
            "bytes_downloaded_in_all": kept + downloaded, "both_runs_wall_s": total}

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    size = args.size_mib * 1024 * 1024
    work = tempfile.mkdtemp(prefix="fetchd-bench-transfer-", dir=os.environ.get("BENCH_DIR") or None)
    os.chmod(work, 0o755)  # nginx's workers run as an unprivileged user
    nginx, port = start_nginx(work, 0)
    try:
        with open(os.path.join(work, "www", "big.bin"), "wb") as f:
            for _ in range(args.size_mib):
                f.write(os.urandom(1024 * 1024))
        url = f"http://127.0.0.1:{port}/big.bin"
        conf = config(work, port, size)
        measure_curl(url, work, size)  # warm the page cache and nginx
        fetchd, curl = [], []
        for _ in range(args.repeat):
            fetchd.append(measure_fetchd(args.bin_dir, conf, work, size))
            curl.append(measure_curl(url, work, size))
        interrupted = measure_interrupted(args.bin_dir, conf, work, size)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(work, ignore_errors=True)
    med = lambda rows, key: statistics.median(row[key] for row in rows)
    mib = size / 1024 / 1024
    result = {
        "size_mib": args.size_mib, "repeat": args.repeat, "bench_dir": os.environ.get("BENCH_DIR") or tempfile.gettempdir(),
        "curl_wall_s": med(curl, "wall_s"), "curl_cpu_s": med(curl, "cpu_s"),
        "fetchd_download_s": med(fetchd, "download_s"), "fetchd_process_wall_s": med(fetchd, "process_wall_s"),
        "fetchd_process_cpu_s": med(fetchd, "process_cpu_s"), "interrupted": interrupted,
        "runs": {"fetchd": fetchd, "curl": curl},
    }
    result["download_rate_ratio"] = result["curl_wall_s"] / result["fetchd_download_s"]
    result["end_to_end_rate_ratio"] = result["curl_wall_s"] / result["fetchd_process_wall_s"]
    result["cpu_ratio"] = result["fetchd_process_cpu_s"] / result["curl_cpu_s"]
    result["curl_sha256sum_wall_s"] = med(curl, "wall_s") + med(curl, "sha256sum_wall_s")
    result["curl_sha256sum_cpu_s"] = med(curl, "cpu_s") + med(curl, "sha256sum_cpu_s")
    result["verified_rate_ratio"] = result["curl_sha256sum_wall_s"] / result["fetchd_process_wall_s"]
    result["verified_cpu_ratio"] = result["fetchd_process_cpu_s"] / result["curl_sha256sum_cpu_s"]
    print(f"{mib:.0f} MiB on loopback, medians of {args.repeat}:")
    print(f"  curl -o:           {result['curl_wall_s']:.2f} s ({mib / result['curl_wall_s']:.0f} MiB/s), CPU {result['curl_cpu_s']:.2f} s")
    print(f"  fetchd download:   {result['fetchd_download_s']:.2f} s ({mib / result['fetchd_download_s']:.0f} MiB/s)"
          f"  -> rate {result['download_rate_ratio']:.2f}x curl's")
    print(f"  fetchd end to end: {result['fetchd_process_wall_s']:.2f} s (download + SHA-256 + publish with syncfs), "
          f"CPU {result['fetchd_process_cpu_s']:.2f} s -> rate {result['end_to_end_rate_ratio']:.2f}x, CPU {result['cpu_ratio']:.2f}x curl's")
    print(f"  curl -o + sha256sum: {result['curl_sha256sum_wall_s']:.2f} s, CPU {result['curl_sha256sum_cpu_s']:.2f} s "
          f"-> fetchd end to end: rate {result['verified_rate_ratio']:.2f}x, CPU {result['verified_cpu_ratio']:.2f}x")
    print(f"  killed at {interrupted['kept_at_kill'] / 2**20:.0f} MiB and resumed: {interrupted['bytes_downloaded_in_all'] / 2**20:.1f} MiB "
          f"downloaded in all, both runs {interrupted['both_runs_wall_s']:.2f} s")
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)

if __name__ == "__main__":
    main()
