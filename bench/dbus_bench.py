#!/usr/bin/python3
"""What the D-Bus API costs an application, against the control socket in the same run.

Starts a private dbus-daemon and fetchd on it (`dbus_api = "session"`, the caller's group as
`control_group`, so a handler on loopback may be registered), registers one http handler whose
server (a thread of this script) answers every request with new content, and measures, over N
calls each, alternating the two paths call by call so both see the same machine:

- method round trip: `ListHandlers` on one D-Bus connection (python3-dbus), against `ping` on
  the control socket (a connection per request, as fetchctl makes);
- signal delay: from the moment the server has sent a response's last byte to the moment the
  client has the fetch's end: `FetchCompleted` after `FetchNow`, against the answer of a
  waiting `fetch` request on the control socket. Both include what fetchd does after the
  transfer (publishing, recording the result); they differ only in how the end reaches the
  client.

Medians and 99th percentiles in microseconds, and each D-Bus figure as a ratio to its
control-socket peer. CLOCK_MONOTONIC is shared by the server thread and the client, so the
delays need no clock agreement between processes.

    bench/dbus_bench.py --bin-dir .build/release [-n 1000] [--json OUT]
"""
import argparse
import grp
import http.server
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

BUS_NAME, PATH, INTERFACE = "org.fetchd.Fetchd1", "/org/fetchd/Fetchd1", "org.fetchd.Fetchd1"


class Server(http.server.BaseHTTPRequestHandler):
    """New content on every request; the time its last byte was written, in `sent`."""
    counter = 0
    sent = []

    def do_GET(self):
        Server.counter += 1
        body = f"content {Server.counter}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        Server.sent.append(time.monotonic())

    def log_message(self, *args):
        pass


def control(socket_path, request):
    """One request on a new control-socket connection; the decoded answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(socket_path)
        connection.sendall(json.dumps(dict(version=1, **request)).encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    return json.loads(answer)


def summary(samples):
    ordered = sorted(samples)
    return {"median_us": round(statistics.median(ordered) * 1e6, 1),
            "p99_us": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e6, 1), "n": len(ordered)}


def start(root, bin_dir, port):
    address = f"unix:path={root}/bus"
    bus_daemon = subprocess.Popen(["dbus-daemon", "--session", f"--address={address}", "--nofork", "--nopidfile"])
    group = grp.getgrgid(os.getgid()).gr_name
    (root / "fetchd.toml").write_text(
        f'cache_dir = "{root}/cache"\nstate_dir = "{root}/state"\nsocket = "{root}/control.sock"\n'
        f'heartbeat = "1h"\ndbus_api = "session"\ncontrol_group = "{group}"\n')
    (root / "handlers.d").mkdir()
    environment = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=address)
    fetchd = subprocess.Popen([f"{bin_dir}/fetchd", "--config", str(root / "fetchd.toml")], env=environment,
                              stdout=subprocess.DEVNULL, stderr=open(root / "fetchd.log", "w"))
    for _ in range(200):
        if (root / "control.sock").exists():
            break
        time.sleep(0.05)
    os.environ["DBUS_SESSION_BUS_ADDRESS"] = address
    bus = dbus.SessionBus()
    for _ in range(200):
        try:
            fetchd_api = dbus.Interface(bus.get_object(BUS_NAME, PATH), INTERFACE)
            fetchd_api.ListHandlers()
            break
        except dbus.exceptions.DBusException:
            time.sleep(0.05)
    name = fetchd_api.RegisterHandler("bench", dbus.Dictionary(
        {"kind": "http", "url": f"http://127.0.0.1:{port}/content", "min_interval": "never",
         "usage": dbus.Array(["reads"], signature="s")}, signature="sv"))
    return bus_daemon, fetchd, bus, fetchd_api, str(name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--json")
    arguments = parser.parse_args()
    DBusGMainLoop(set_as_default=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    root = pathlib.Path(tempfile.mkdtemp(prefix="fetchd-dbus-bench-", dir=os.environ.get("BENCH_DIR")))
    bus_daemon, fetchd, bus, api, qualified = start(root, arguments.bin_dir, server.server_address[1])
    socket_path = str(root / "control.sock")
    loop, ended = GLib.MainLoop(), []

    def completed(name, result, version):
        if name == "bench":
            ended.append(time.monotonic())
            loop.quit()

    bus.add_signal_receiver(completed, signal_name="FetchCompleted", dbus_interface=INTERFACE, path=PATH)
    samples = {"method_dbus": [], "method_control": [], "signal_dbus": [], "signal_control": []}
    # Asked before the run's folder is removed.
    filesystem = subprocess.run(["stat", "-f", "-c", "%T", str(root)], capture_output=True, text=True).stdout.strip()
    try:
        for index in range(arguments.n):
            began = time.monotonic()
            api.ListHandlers()
            samples["method_dbus"].append(time.monotonic() - began)
            began = time.monotonic()
            assert control(socket_path, {"command": "ping"})["ok"]
            samples["method_control"].append(time.monotonic() - began)

            ended.clear()
            api.FetchNow("bench", dbus.Dictionary({}, signature="sv"))
            GLib.timeout_add(30_000, loop.quit)
            loop.run()
            if not ended:
                sys.exit("no FetchCompleted within 30 s")
            samples["signal_dbus"].append(ended[0] - Server.sent[-1])
            answer = control(socket_path, {"command": "fetch", "handler": qualified, "wait": True})
            arrived = time.monotonic()
            if not answer.get("ok"):
                sys.exit(f"control fetch failed: {answer}")
            samples["signal_control"].append(arrived - Server.sent[-1])
    finally:
        fetchd.terminate()
        fetchd.wait(timeout=30)
        bus_daemon.terminate()
        shutil.rmtree(root, ignore_errors=True)
    results = {key: summary(values) for key, values in samples.items()}
    results["cache_filesystem"] = filesystem
    for kind in ("method", "signal"):
        results[f"{kind}_ratio_median"] = round(results[f"{kind}_dbus"]["median_us"] / results[f"{kind}_control"]["median_us"], 2)
    print(json.dumps(results, indent=1))
    if arguments.json:
        pathlib.Path(arguments.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
