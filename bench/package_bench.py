#!/usr/bin/env python3
"""The package, and what linking Swift statically costs a running fetchd.

Sizes: the .deb, its Installed-Size, and each binary as packaged (stripped). Then the
packaged fetchd (statically linked, taken out of the .deb) against the same
sources linked to the toolchain's shared Swift runtime and Foundation (the anchor), on the same
configuration (idle_bench.py's: N http handlers on file:// URLs, not due again for hours), in
alternating rounds:
- time from exec to READY=1, read from a NOTIFY_SOCKET this script binds (what
  `systemctl start` waits for with Type=notify, less systemd's own part);
- idle RSS, PSS and anonymous memory (smaps_rollup) once the first wake has published every
  handler and `--settle` seconds have passed.

    bench/package_bench.py --deb FILE --dynamic DIR [--rounds 5] [--handlers 100] [--json OUT]
"""
import argparse
import json
import os
import pathlib
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from idle_bench import memory_kib, write_config  # noqa: E402


def run_once(fetchd, handlers, settle_seconds):
    """(seconds from exec to READY=1, memory_kib after the first wake and `settle_seconds`)."""
    with tempfile.TemporaryDirectory(prefix="fetchd-package-") as folder:
        root = pathlib.Path(folder)
        os.chmod(root, 0o755)
        write_config(root, handlers)
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(str(root / "notify.sock"))
        notify.settimeout(60)
        environment = {key: value for key, value in os.environ.items()
                       if key not in ("INVOCATION_ID", "WATCHDOG_USEC", "LISTEN_FDS")}
        environment["NOTIFY_SOCKET"] = str(root / "notify.sock")
        started = time.monotonic()
        daemon = subprocess.Popen([fetchd, "--config", str(root / "fetchd.toml")], env=environment,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ready = None
            while ready is None:
                message = notify.recv(4096).decode()
                if "READY=1" in message.split("\n"):
                    ready = time.monotonic() - started
            deadline = time.monotonic() + 120
            while sum(1 for index in range(handlers) if (root / "cache" / f"h{index}" / "latest").exists()) < handlers:
                if time.monotonic() > deadline:
                    sys.exit(f"{fetchd}: the first wake did not publish all {handlers} handlers in 120 s")
                time.sleep(0.2)
            time.sleep(settle_seconds)
            return ready, memory_kib(daemon.pid)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
            notify.close()


def package_sizes(deb):
    """The .deb's size, its Installed-Size and each packaged binary's size, in KiB."""
    installed = subprocess.run(["dpkg-deb", "-f", deb, "Installed-Size"], check=True, capture_output=True, text=True)
    listing = subprocess.run(["dpkg-deb", "-c", deb], check=True, capture_output=True, text=True).stdout
    binaries = {line.split()[-1].rsplit("/", 1)[-1]: int(line.split()[2]) // 1024
                for line in listing.splitlines() if "/usr/bin/" in line and not line.endswith("/")}
    return {"deb_kib": os.path.getsize(deb) // 1024, "installed_kib": int(installed.stdout.strip()),
            "binaries_kib": binaries}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dynamic", required=True, help="folder of the dynamically linked release build")
    parser.add_argument("--deb", required=True)
    parser.add_argument("--handlers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--settle", type=float, default=10)
    parser.add_argument("--json")
    args = parser.parse_args()

    sizes = package_sizes(args.deb)
    unpacked = tempfile.TemporaryDirectory(prefix="fetchd-package-deb-")
    subprocess.run(["dpkg-deb", "-x", args.deb, unpacked.name], check=True)
    binaries = {"static": os.path.join(unpacked.name, "usr/bin/fetchd"), "dynamic": os.path.join(args.dynamic, "fetchd")}
    print(f"package {sizes['deb_kib'] / 1024:.1f} MiB, installed {sizes['installed_kib'] / 1024:.1f} MiB; binaries "
          + ", ".join(f"{name} {kib / 1024:.1f} MiB" for name, kib in sorted(sizes["binaries_kib"].items())))
    runs = {"static": [], "dynamic": []}
    for round_number in range(args.rounds):
        # Alternating, and which goes first alternates too, so drift on a noisy machine falls on both.
        order = ["static", "dynamic"] if round_number % 2 == 0 else ["dynamic", "static"]
        for kind in order:
            ready, memory = run_once(binaries[kind], args.handlers, args.settle)
            runs[kind].append({"ready_seconds": ready, **memory})
            print(f"  round {round_number + 1} {kind:<7} READY=1 after {ready * 1000:6.1f} ms; RSS {memory['rss_kib'] / 1024:.1f} "
                  f"MiB, PSS {memory['pss_kib'] / 1024:.1f} MiB, anonymous {memory['anonymous_kib'] / 1024:.1f} MiB")
    medians = {kind: {key: statistics.median(run[key] for run in rows) for key in rows[0]} for kind, rows in runs.items()}
    for key, label in [("ready_seconds", "READY=1"), ("rss_kib", "RSS"), ("pss_kib", "PSS"), ("anonymous_kib", "anonymous")]:
        static, dynamic = medians["static"][key], medians["dynamic"][key]
        unit = (lambda value: f"{value * 1000:.1f} ms") if key == "ready_seconds" else (lambda value: f"{value / 1024:.1f} MiB")
        print(f"{label:<10} static {unit(static):>10}, dynamic {unit(dynamic):>10}: {static / dynamic:.2f}x the dynamic build")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"handlers": args.handlers, "rounds": args.rounds, **sizes,
                                                       "runs": runs, "medians": medians}, indent=2) + "\n")


if __name__ == "__main__":
    main()
