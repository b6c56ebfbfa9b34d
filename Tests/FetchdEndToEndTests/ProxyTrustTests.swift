import FetchdState
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The address policy with a forward proxy that resolves names itself (as Squid does), through
/// the real daemon in a network and mount namespace of the test's own, its D-Bus API on a
/// private bus outside it (a socket in the file system reaches into the namespace). There:
/// the proxy on 127.0.0.1:3128, a "remote" server on `RemoteAddresses.first`:9000 (`/goto/URL`
/// answers 302 to URL), a loopback-only service on 127.0.0.1:8081 holding a secret, and
/// /etc/hosts naming `vm` (the loopback) and `news.example` (the remote server).
/// fetchd's environment: `http_proxy` and `https_proxy` to the proxy, `no_proxy=vm`.
@Suite(.serialized)
struct ProxyTrustTests {
    static let canRun = RedirectConnectTests.canRun && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// argv: ready file, log file, the remote address. Serves the remote server, the secret service and the proxy
    /// (absolute-form requests and CONNECT, names resolved here); appends a line per request to
    /// the log: "proxy GET URL", "proxy CONNECT HOST:PORT", "remote PATH", "secret PATH". Ends
    /// with its parent (fetchd, which the launching shell became).
    static let servers = #"""
        import ctypes, http.server, select, signal, socket, socketserver, sys, threading
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        ready, log, remote = sys.argv[1], sys.argv[2], sys.argv[3]
        lock = threading.Lock()
        def note(line):
            with lock, open(log, "a") as f: f.write(line + "\n")
        class Remote(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def do_GET(self):
                note("remote " + self.path)
                if self.path.startswith("/goto/"):
                    self.send_response(302); self.send_header("Location", self.path[6:])
                    self.send_header("Content-Length", "0"); self.end_headers(); return
                body = b"public\n"
                self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
                self.wfile.write(body)
        class Secret(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def do_GET(self):
                note("secret " + self.path)
                body = b"loopback only\n"
                self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
                self.wfile.write(body)
        def pipe(a, b):
            sockets = [a, b]
            while True:
                readable, _, _ = select.select(sockets, [], [], 10)
                if not readable: return
                for s in readable:
                    data = s.recv(65536)
                    if not data: return
                    (b if s is a else a).sendall(data)
        class Proxy(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def do_CONNECT(self):
                note("proxy CONNECT " + self.path)
                host, port = self.path.rsplit(":", 1)
                upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=5)
                self.send_response(200); self.end_headers()
                pipe(self.connection, upstream); upstream.close()
                self.close_connection = True
            def do_GET(self):
                note("proxy GET " + self.path)
                rest = self.path.split("://", 1)[1]
                hostport, _, path = rest.partition("/")
                host, _, port = hostport.partition(":")
                upstream = socket.create_connection((host, int(port or 80)), timeout=5)
                upstream.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, hostport)).encode())
                answer = b""
                while True:
                    data = upstream.recv(65536)
                    if not data: break
                    answer += data
                upstream.close()
                self.wfile.write(answer)
                self.close_connection = True
        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True
        for address, port, handler in ((remote, 9000, Remote), ("127.0.0.1", 8081, Secret), ("127.0.0.1", 3128, Proxy)):
            threading.Thread(target=S((address, port), handler).serve_forever, daemon=True).start()
        open(ready, "w").close()
        threading.Event().wait()
        """#

    /// The private bus, fetchd on it inside the namespaces, and the servers' log.
    struct Fixture {
        let bus: DBusAPITests.Bus
        let daemon: DaemonProcess
        let log: String

        /// Starts the servers and fetchd (with `handlers` in its handler file) in the namespaces.
        init(handlers: String = "") async throws {
            bus = try await DBusAPITests.Bus()
            daemon = try DaemonProcess(handlers: handlers, heartbeat: "1h", extraMain: "dbus_api = \"session\"")
            let files = (script: daemon.directory.file("servers.py"), ready: daemon.directory.file("servers.ready"),
                         hosts: daemon.directory.file("hosts"))
            log = daemon.directory.file("servers.log")
            try ProxyTrustTests.servers.write(toFile: files.script, atomically: true, encoding: .utf8)
            try "127.0.0.1 localhost vm\n::1 localhost\n\(RemoteAddresses.first) news.example\n"
                .write(toFile: files.hosts, atomically: true, encoding: .utf8)
            FileManager.default.createFile(atPath: log, contents: nil)
            let ip = try #require(RedirectPolicyTests.ip)
            // The shell becomes fetchd (exec), so the daemon's stop reaches fetchd itself and the
            // servers end with it.
            let setup = """
                set -e
                mount --bind '\(files.hosts)' /etc/hosts
                \(ip) link set lo up
                \(ip) addr add \(RemoteAddresses.first)/32 dev lo
                python3 '\(files.script)' '\(files.ready)' '\(log)' \(RemoteAddresses.first) &
                for i in $(seq 100); do [ -e '\(files.ready)' ] && break; sleep 0.1; done
                export http_proxy=http://127.0.0.1:3128 https_proxy=http://127.0.0.1:3128 no_proxy=vm
                exec "$@"
                """
            try await daemon.start(environment: bus.environment, launcher: [
                try #require(RedirectPolicyTests.unshare), "--net", "--mount", "/bin/sh", "-c", setup, "sh",
            ])
            #expect(await bus.waitForList(), "fetchd never took its bus name")
        }

        /// Registers `name` for `url` as `nobody`, then waits for its first result (fetched at once).
        func registerAsNobody(_ name: String, _ url: String) async throws -> (result: String, reason: String)? {
            let registered = try await bus.run(["register", name, url, "min_interval=1d"], asNobody: true)
            #expect(registered.output == "\(name)@65534\n", "\(registered.output)")
            return await result(of: "\(name)@65534")
        }

        /// `name`'s first result, once it has one (within 20 s): a registered handler's as its
        /// owner reads it over D-Bus, a handler file's from the state database.
        func result(of name: String) async -> (result: String, reason: String)? {
            var found: (String, String)?
            _ = await eventually(timeoutSeconds: 20, pollMilliseconds: 200) {
                if !name.hasSuffix("@65534") {
                    let state = try? StateStore(path: daemon.directory.file("state/state.sqlite"))
                    guard let last = try? state?.history(of: name, limit: 1).first else { return false }
                    found = (last.result.name, last.result.reason ?? "")
                    return true
                }
                let status = (try? await bus.run(["status", String(name.dropLast(6))], asNobody: true))?.output ?? ""
                let fields = Dictionary(status.split(separator: "\n").map { line in
                    let parts = line.split(separator: "=", maxSplits: 1)
                    return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
                }, uniquingKeysWith: { $1 })
                guard let result = fields["last_result"] else { return false }
                found = (result, fields["last_reason"] ?? "")
                return true
            }
            return found
        }

        /// The servers' log, a line per request.
        var requests: [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        func stop() async {
            let (code, output) = await daemon.stopWithoutBlocking()
            #expect(code == 0, "\(output.suffix(3_000))")
            await bus.bus.stop()
            daemon.directory.remove()
        }
    }

    /// A global-only handler (registered by an unprivileged uid) whose host is in `no_proxy`
    /// and resolves to the loopback is refused before anything connects; a redirect from the
    /// remote server to it likewise, whether it would go direct or through the proxy. A name
    /// that resolves to a global address is fetched through the proxy's tunnel to the address
    /// fetchd checked: the proxy is never handed the name.
    @Test(.enabled(if: ProxyTrustTests.canRun, "needs root, unshare, ip, mount and setpriv"))
    func aGlobalOnlyHandlerNeverReachesTheLoopbackThroughOrPastTheProxy() async throws {
        let fixture = try await Fixture()
        let remote = "http://\(RemoteAddresses.first):9000"
        let rule = "this handler may reach only addresses on the Internet at large"

        let direct = try await fixture.registerAsNobody("direct", "http://vm:8081/secret")
        #expect(direct?.result == "failed" && direct?.reason == "forbidden address: vm resolves to 127.0.0.1, a loopback address; \(rule)",
                "\(String(describing: direct))")
        let hop = try await fixture.registerAsNobody("hop", "\(remote)/goto/http://vm:8081/secret")
        #expect(hop?.result == "failed" && hop?.reason
                == "forbidden redirect: http://vm:8081/secret leads to 127.0.0.1, a loopback address, and the configured URL's host is not one",
                "\(String(describing: hop))")
        let named = try await fixture.registerAsNobody("named", "\(remote)/goto/http://localhost.localdomain:8081/secret")
        #expect(named?.result == "failed" && named?.reason.hasPrefix("forbidden redirect: http://localhost.localdomain:8081/secret: "
                + "through the proxy, localhost.localdomain is a name the proxy would resolve") == true, "\(String(describing: named))")
        let pinned = try await fixture.registerAsNobody("pinned", "http://news.example:9000/ok")
        #expect(pinned?.result == "newData", "\(String(describing: pinned)) \(fixture.requests)")

        let requests = fixture.requests
        #expect(!requests.contains { $0.hasPrefix("secret") }, "the loopback-only service was reached: \(requests)")
        #expect(requests.contains("proxy CONNECT \(RemoteAddresses.first):9000"), "\(requests)")
        #expect(!requests.contains { $0.hasPrefix("proxy") && ($0.contains("news.example") || $0.contains("localhost.localdomain")) },
                "the proxy was handed a name to resolve: \(requests)")
        await fixture.stop()
    }

    /// An administrator's handler behind the proxy: a redirect to the proxy's own address on
    /// another port (the loopback-only service) is a direct connection, refused unconnected;
    /// one that stays with the proxy is fetched through it.
    @Test(.enabled(if: ProxyTrustTests.canRun, "needs root, unshare, ip, mount and setpriv"))
    func aRedirectToTheProxysAddressOnAnotherPortIsRefused() async throws {
        let remote = "http://\(RemoteAddresses.first):9000"
        let fixture = try await Fixture(handlers: """
            [[handler]]
            name = "sideways"
            kind = "http"
            url = "\(remote)/goto/http://vm:8081/secret"

            [[handler]]
            name = "through"
            kind = "http"
            url = "\(remote)/goto/\(remote)/ok"
            """)
        let sideways = await fixture.result(of: "sideways")
        #expect(sideways?.result == "failed" && sideways?.reason
                == "forbidden redirect: http://vm:8081/secret leads to 127.0.0.1, a loopback address, and the configured URL's host is not one",
                "\(String(describing: sideways))")
        let through = await fixture.result(of: "through")
        #expect(through?.result == "newData", "\(String(describing: through)) \(fixture.requests)")
        let requests = fixture.requests
        #expect(!requests.contains { $0.hasPrefix("secret") }, "the loopback-only service was reached: \(requests)")
        #expect(requests.contains("proxy GET \(remote)/ok"), "\(requests)")
        #expect(!FileManager.default.fileExists(atPath: fixture.daemon.cachePath + "/sideways/latest"), "sideways published")
        await fixture.stop()
    }
}
