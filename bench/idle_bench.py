#!/usr/bin/env python3
"""What fetchd costs while it has nothing to do: wake-ups per minute per thread, and memory.

Starts fetchd (not under systemd, so no watchdog pings) with N http handlers that are not due
again for hours (`min_interval = "6h"`, `heartbeat = "1h"`), waits until its first wake has
fetched them all, then counts every thread's context switches (voluntary + involuntary, from
/proc/PID/task/*/status) over the window: each is a wake-up of that thread. Memory is RSS, PSS
and anonymous memory from /proc/PID/smaps_rollup at the end of the window, and the largest
mappings' resident memory from /proc/PID/smaps.

The handlers fetch file:// URLs (`allow_file_urls`), so they are http handlers driven by libcurl
without a server whose own wake-ups would muddle nothing here but whose start would slow the run.

With --dbus-client, fetchd also offers its D-Bus API on a private dbus-daemon, and a client
(python3-dbus) stays connected through the window after calling a method and asking for
fetchd's signals: the connection must add no wake-up either.

    bench/idle_bench.py --fetchd .build/release/fetchd [--handlers 100] [--seconds 600] [--dbus-client] [--json OUT]
"""
import argparse
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time


def switches(pid):
    """{tid: (name, voluntary + involuntary context switches)} for every thread of `pid`."""
    counts = {}
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = dict(line.split(":", 1) for line in (task / "status").read_text().splitlines() if ":" in line)
            counts[task.name] = (name, int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"]))
        except (FileNotFoundError, ProcessLookupError, KeyError):
            continue  # a thread that ended meanwhile
    return counts


def memory_kib(pid):
    """RSS, PSS and anonymous memory in KiB (smaps_rollup)."""
    fields = {}
    for line in pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name.strip()] = int(value.split()[0])
    return {"rss_kib": fields["Rss"], "pss_kib": fields["Pss"], "anonymous_kib": fields["Anonymous"]}


def resident_by_mapping(pid, top=12):
    """[(file name or [anon], RSS KiB, anonymous KiB)] for the `top` largest, from /proc/PID/smaps."""
    rss, anonymous, current = {}, {}, None
    for line in pathlib.Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split(None, 5)
        if len(head) >= 5 and "-" in head[0] and ":" not in head[0]:
            current = head[5].rsplit("/", 1)[-1] if len(head) == 6 and head[5] else "[anon]"
        elif line.startswith("Rss:"):
            rss[current] = rss.get(current, 0) + int(line.split()[1])
        elif line.startswith("Anonymous:"):
            anonymous[current] = anonymous.get(current, 0) + int(line.split()[1])
    largest = sorted(rss.items(), key=lambda item: -item[1])[:top]
    return [(name, kib, anonymous.get(name, 0)) for name, kib in largest]


# The client --dbus-client keeps connected: one call, a match for fetchd's signals, then asleep
# in its main loop until stdin closes.
DBUS_CLIENT = """
import sys, dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib
DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
dbus.Interface(bus.get_object("org.fetchd.Fetchd1", "/org/fetchd/Fetchd1"), "org.fetchd.Fetchd1").ListHandlers()
bus.add_signal_receiver(lambda *a: None, signal_name="FetchCompleted", dbus_interface="org.fetchd.Fetchd1")
print("connected", flush=True)
loop = GLib.MainLoop()
GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, lambda *a: loop.quit())
loop.run()
"""


def start_bus(root):
    """A private dbus-daemon, its socket there, before fetchd starts (which connects at once)."""
    bus = subprocess.Popen(["dbus-daemon", "--session", f"--address=unix:path={root}/bus", "--nofork", "--nopidfile"],
                           stderr=subprocess.DEVNULL)
    for _ in range(100):
        if (root / "bus").exists():
            return bus
        time.sleep(0.05)
    sys.exit("dbus-daemon did not start")


def start_dbus_client(root):
    """A client connected to fetchd on the bus at `root`; its process, once connected."""
    environment = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=f"unix:path={root}/bus")
    for _ in range(100):
        client = subprocess.Popen(["/usr/bin/python3", "-c", DBUS_CLIENT], env=environment, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if client.stdout.readline().strip() == "connected":
            return client
        client.wait()
        time.sleep(0.1)
    sys.exit("the D-Bus client never reached fetchd")


def write_config(root, handlers, dbus_api=None):
    (root / "handlers.d").mkdir(parents=True)
    (root / "content").mkdir()
    (root / "fetchd.toml").write_text(
        f'cache_dir = "{root}/cache"\nstate_dir = "{root}/state"\nsocket = "{root}/control.sock"\n'
        'heartbeat = "1h"\n' + (f'dbus_api = "{dbus_api}"\n' if dbus_api else ""))
    lines = []
    for index in range(handlers):
        (root / "content" / f"h{index}.txt").write_text(f"content {index}\n")
        lines.append(f'[[handler]]\nname = "h{index}"\nkind = "http"\nurl = "file://{root}/content/h{index}.txt"\n'
                     'allow_file_urls = true\nmin_interval = "6h"\n')
    (root / "handlers.d" / "idle.toml").write_text("\n".join(lines))
    os.chmod(root / "fetchd.toml", 0o644)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fetchd", required=True)
    parser.add_argument("--handlers", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--dbus-client", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="fetchd-idle-") as folder:
        root = pathlib.Path(folder)
        os.chmod(root, 0o755)
        write_config(root, args.handlers, "session" if args.dbus_client else None)
        environment = {key: value for key, value in os.environ.items()
                       if key not in ("INVOCATION_ID", "NOTIFY_SOCKET", "WATCHDOG_USEC", "LISTEN_FDS")}
        bus = client = None
        if args.dbus_client:
            environment["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={root}/bus"
            bus = start_bus(root)
        daemon = subprocess.Popen([args.fetchd, "--config", str(root / "fetchd.toml")], env=environment,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                published = sum(1 for index in range(args.handlers)
                                if (root / "cache" / f"h{index}" / "latest").exists())
                if published == args.handlers:
                    break
                time.sleep(0.2)
            else:
                sys.exit(f"the first wake did not publish all {args.handlers} handlers in 120 s")
            if args.dbus_client:
                client = start_dbus_client(root)
            time.sleep(5)  # the wake's tail: results recorded, plans made
            before = switches(daemon.pid)
            started = time.monotonic()
            time.sleep(args.seconds)
            after = switches(daemon.pid)
            elapsed_minutes = (time.monotonic() - started) / 60
            memory = memory_kib(daemon.pid)
            mappings = resident_by_mapping(daemon.pid)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
            for process in (client, bus):
                if process:
                    process.terminate()
                    process.wait(timeout=10)

    threads = []
    for tid, (name, count) in sorted(after.items()):
        woke = count - before.get(tid, (name, 0))[1]
        threads.append({"tid": int(tid), "name": name, "wakeups_per_minute": round(woke / elapsed_minutes, 2)})
    total = sum(thread["wakeups_per_minute"] for thread in threads)
    result = {"handlers": args.handlers, "window_seconds": args.seconds, "dbus_client": args.dbus_client, "threads": threads,
              "wakeups_per_minute": round(total, 2), **memory,
              "resident_by_mapping_kib": [{"mapping": name, "rss": kib, "anonymous": anon} for name, kib, anon in mappings]}
    for thread in threads:
        print(f"  {thread['name']:<16} tid {thread['tid']:<8} {thread['wakeups_per_minute']:8.2f} wake-ups/min")
    client = ", a D-Bus client connected" if args.dbus_client else ""
    print(f"idle, {args.handlers} handlers{client}, {args.seconds:.0f} s: {total:.2f} wake-ups/min over {len(threads)} threads; "
          f"RSS {memory['rss_kib'] / 1024:.1f} MiB, PSS {memory['pss_kib'] / 1024:.1f} MiB, "
          f"anonymous {memory['anonymous_kib'] / 1024:.1f} MiB")
    print("  resident by mapping (KiB, of which anonymous): "
          + ", ".join(f"{name} {kib} ({anon})" for name, kib, anon in mappings))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
