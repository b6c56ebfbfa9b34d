import FetchdState
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A refused redirect is refused before fetchd connects: the internal address it points at never
/// sees a TCP connection, so a hostile server cannot use fetchd to probe which internal ports are
/// open. Runs the real daemon (`fetchd --once`) in network, PID and mount namespaces of the
/// test's own; `lo` there holds the "remote" servers (`RemoteAddresses.first` redirects,
/// `RemoteAddresses.second` serves), a proxy on private 10.0.0.3:3128, and traps: listening
/// sockets nobody accepts on, whose accept queues are counted once fetchd has exited (the
/// kernel completes a handshake for a listener on its own, so any connection shows there).
struct RedirectConnectTests {
    /// Root, `unshare`, `ip` and `mount`: the namespaces and the hosts file in them.
    static let canRun = RedirectPolicyTests.canRun && FileManager.default.isExecutableFile(atPath: "/bin/mount")

    /// argv: ready file, done file, counts file, then the traps ("ADDRESS:PORT", IPv6 in
    /// brackets). Serves `/goto/URL` as a 302 to URL and anything else as a 200, on the remote
    /// addresses and, as a proxy (a request in absolute form is served as its path), on
    /// 10.0.0.3:3128. Once the done file exists it writes, per trap, how many connections wait
    /// in its accept queue, and how many requests came through the proxy.
    static let server = #"""
        import http.server, os, socket, socketserver, sys, threading, time
        ready, done, counts, traps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
        proxied = []
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def do_GET(self):
                path = self.path
                if path.startswith("http://"):
                    proxied.append(path)
                    path = "/" + (path.split("/", 3)[3] if path.count("/") >= 3 else "")
                if path.startswith("/goto/"):
                    self.send_response(302); self.send_header("Location", path[6:])
                    self.send_header("Content-Length", "0"); self.end_headers(); return
                body = b"fetched\n"
                self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
                self.wfile.write(body)
        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
        listeners = []
        for trap in traps:
            host, port = trap.rsplit(":", 1)
            host = host.strip("[]")
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, int(port))); s.listen(16); s.setblocking(False)
            listeners.append((trap, s))
        for address, port in (("11.0.0.7", 9000), ("11.0.0.8", 9000), ("10.0.0.3", 3128)):
            threading.Thread(target=S((address, port), H).serve_forever, daemon=True).start()
        open(ready, "w").close()
        for _ in range(1200):
            if os.path.exists(done): break
            time.sleep(0.05)
        lines = []
        for trap, s in listeners:
            n = 0
            while True:
                try:
                    c, _ = s.accept(); c.close(); n += 1
                except BlockingIOError:
                    break
            lines.append("%s %d" % (trap, n))
        lines.append("proxied %d" % len(proxied))
        with open(counts + ".tmp", "w") as f: f.write("\n".join(lines) + "\n")
        os.rename(counts + ".tmp", counts)
        """#

    /// What a run left: the state database, the counts by trap (and "proxied"), fetchd's output.
    struct Run {
        /// The daemon's files.
        let daemon: DaemonProcess
        /// Its state database, for the results.
        let state: StateStore
        /// Connections waiting per trap ("ADDRESS:PORT"), and requests through the proxy ("proxied").
        let counts: [String: Int]
        /// What fetchd and the namespace's shell printed.
        let output: String
    }

    /// Runs `fetchd --once` on `handlers` in the namespaces, with `environment` exported and
    /// `hosts` as /etc/hosts there.
    static func run(handlers: String, traps: [String], environment: [String: String] = [:],
                    hosts: String = "127.0.0.1 localhost\n::1 localhost\n") async throws -> Run {
        let daemon = try DaemonProcess(handlers: handlers)
        let files = (script: daemon.directory.file("server.py"), ready: daemon.directory.file("server.ready"),
                     done: daemon.directory.file("fetchd.done"), counts: daemon.directory.file("traps.counts"),
                     hosts: daemon.directory.file("hosts"))
        try server.write(toFile: files.script, atomically: true, encoding: .utf8)
        try hosts.write(toFile: files.hosts, atomically: true, encoding: .utf8)
        let ip = try #require(RedirectPolicyTests.ip)
        let exports = environment.sorted { $0.key < $1.key }.map { "export \($0.key)='\($0.value)'" }.joined(separator: "\n")
        let setup = """
            set -e
            mount --bind '\(files.hosts)' /etc/hosts
            \(ip) link set lo up
            for a in \(RemoteAddresses.first) \(RemoteAddresses.second) 10.0.0.3 10.9.8.7 169.254.169.254; do \(ip) addr add $a/32 dev lo; done
            \(ip) -6 addr add fd00::7/128 dev lo nodad
            python3 '\(files.script)' '\(files.ready)' '\(files.done)' '\(files.counts)' \(traps.map { "'\($0)'" }.joined(separator: " ")) &
            for i in $(seq 100); do [ -e '\(files.ready)' ] && break; sleep 0.1; done
            set +e
            \(exports)
            "$@"
            touch '\(files.done)'
            for i in $(seq 100); do [ -e '\(files.counts)' ] && break; sleep 0.1; done
            """
        let result = try await ChildProcess.runWithoutBlocking(try #require(RedirectPolicyTests.unshare), [
            // A PID namespace too, so the server ends with it (`--kill-child`); a mount namespace
            // for the hosts file.
            "--net", "--pid", "--mount", "--fork", "--kill-child", "/bin/sh", "-c", setup, "sh",
            TestBinaries.path(of: "fetchd"), "--config", daemon.configPath, "--once",
        ])
        var counts: [String: Int] = [:]
        for line in ((try? String(contentsOfFile: files.counts, encoding: .utf8)) ?? "").split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, let count = Int(fields[1]) { counts[String(fields[0])] = count }
        }
        return Run(daemon: daemon, state: try StateStore(path: daemon.directory.file("state/state.sqlite")),
                   counts: counts, output: result.output)
    }

    /// Checks that `name` failed with a forbidden redirect to `target` that reached `reached`
    /// ("ADDRESS, a CLASS") and published nothing.
    static func expectRefused(_ run: Run, _ name: String, target: String, reached: String) throws {
        let last = try run.state.history(of: name, limit: 1).first
        #expect(last?.result.name == "failed", "\(name): \(String(describing: last)) \(run.output)")
        #expect(last?.result.reason == "forbidden redirect: \(target) leads to \(reached) address, and the configured URL's host is not one",
                "\(name): \(String(describing: last?.result.reason))")
        #expect(!FileManager.default.fileExists(atPath: run.daemon.cachePath + "/\(name)/latest"), "\(name) published")
    }

    /// Checks that `name` fetched what the remote server serves.
    static func expectFetched(_ run: Run, _ name: String) throws {
        let last = try run.state.history(of: name, limit: 1).first
        #expect(last?.result == .newData, "\(name): \(String(describing: last)) \(run.output)")
        #expect((try? String(contentsOfFile: run.daemon.cachePath + "/\(name)/latest/content", encoding: .utf8)) == "fetched\n")
    }

    /// A handler whose URL is the first remote server's redirect to `target`; `extra` adds keys.
    static func handler(_ name: String, to target: String, extra: String = "") -> String {
        """
        [[handler]]
        name = "\(name)"
        kind = "http"
        url = "http://\(RemoteAddresses.first):9000/goto/\(target)"
        \(extra)

        """
    }

    @Test(.enabled(if: RedirectConnectTests.canRun, "needs root, unshare, ip and mount to make namespaces"))
    func aRefusedRedirectNeverReachesTheInternalAddress() async throws {
        let traps = ["127.0.0.1:9001", "[fd00::7]:9001", "169.254.169.254:9443"]
        let handlers = [
            Self.handler("loopback", to: "http://127.0.0.1:9001/secret"),
            // The kernel connects 0.0.0.0 to the loopback: refused as that, never connected.
            Self.handler("unspecified", to: "http://0.0.0.0:9001/secret"),
            Self.handler("unique-local", to: "http://[fd00::7]:9001/secret"),
            // https: not even a ClientHello; the deadline bounds the run should a connection
            // be made (the trap never answers one).
            Self.handler("metadata-tls", to: "https://169.254.169.254:9443/latest", extra: #"deadline = "3s""#),
            Self.handler("global-to-global", to: "http://\(RemoteAddresses.second):9000/ok"),
        ]
        let run = try await Self.run(handlers: handlers.joined(separator: "\n"), traps: traps)
        defer { run.daemon.directory.remove() }
        try Self.expectRefused(run, "loopback", target: "http://127.0.0.1:9001/secret", reached: "127.0.0.1, a loopback")
        try Self.expectRefused(run, "unspecified", target: "http://0.0.0.0:9001/secret", reached: "127.0.0.1, a loopback")
        try Self.expectRefused(run, "unique-local", target: "http://[fd00::7]:9001/secret", reached: "fd00::7, a private")
        try Self.expectRefused(run, "metadata-tls", target: "https://169.254.169.254:9443/latest", reached: "169.254.169.254, a link-local")
        try Self.expectFetched(run, "global-to-global")
        for trap in traps {
            #expect(run.counts[trap] == 0, "\(trap) saw \(run.counts[trap].map(String.init) ?? "no count") connections: \(run.output)")
        }
    }

    /// The bypass with a proxy: fetchd's environment names a proxy on an internal address and
    /// `no_proxy` for the internal domain; the public server redirects to a host there, which
    /// goes direct, to an internal address (the namespace's /etc/hosts). Refused without a
    /// connection; a redirect that stays with the proxy is fetched through it.
    @Test(.enabled(if: RedirectConnectTests.canRun, "needs root, unshare, ip and mount to make namespaces"))
    func aHopPastTheProxyNeverReachesTheInternalAddress() async throws {
        let handlers = [
            Self.handler("past-proxy", to: "http://wiki.corp.example:9000/secret"),
            Self.handler("through-proxy", to: "http://\(RemoteAddresses.second):9000/ok"),
        ]
        let run = try await Self.run(
            handlers: handlers.joined(separator: "\n"), traps: ["10.9.8.7:9000"],
            environment: ["http_proxy": "http://10.0.0.3:3128", "no_proxy": ".corp.example"],
            hosts: "127.0.0.1 localhost\n::1 localhost\n10.9.8.7 wiki.corp.example\n")
        defer { run.daemon.directory.remove() }
        try Self.expectRefused(run, "past-proxy", target: "http://wiki.corp.example:9000/secret", reached: "10.9.8.7, a private")
        try Self.expectFetched(run, "through-proxy")
        #expect(run.counts["10.9.8.7:9000"] == 0,
                "the no_proxy host saw \(String(describing: run.counts["10.9.8.7:9000"])) connections: \(run.output)")
        // past-proxy's first request, and both of through-proxy's.
        #expect((run.counts["proxied"] ?? 0) >= 3, "the proxy was not used: \(run.counts) \(run.output)")
    }
}
