import FetchdState
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Where a server may redirect fetchd, through the real daemon (`fetchd --once`) in a network
/// namespace of the test's own: `lo` there also holds a "remote" address (`RemoteAddresses.first`,
/// global for the policy), a second one (`RemoteAddresses.second`), link-local
/// 169.254.169.254 (a cloud's metadata service), private 10.1.2.3, shared 100.64.1.1 and
/// unique-local fd00::7. One server listens on every address at port 9000: `/goto/URL` answers
/// 302 to URL, `/secret` is what only the machine itself should reach.
struct RedirectPolicyTests {
    static let unshare = ["/usr/bin/unshare", "/bin/unshare"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let canRun = getuid() == 0 && unshare != nil && ip != nil

    static let server = #"""
        import http.server, socket, socketserver, sys
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def do_GET(self):
                if self.path.startswith("/goto/"):
                    self.send_response(302); self.send_header("Location", self.path[6:])
                    self.send_header("Content-Length", "0"); self.end_headers(); return
                body = b"internal only\n" if self.path == "/secret" else b"?"
                self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
                self.wfile.write(body)
        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            address_family = socket.AF_INET6
            daemon_threads = True
            def server_bind(self):
                self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                super().server_bind()
        server = S(("::", 9000), H)
        open(sys.argv[1], "w").close()
        server.serve_forever()
        """#

    /// Handlers named by what their redirect targets, all configured on the remote address.
    /// The connected address is what is checked: 0.0.0.0 connects to 127.0.0.1 on Linux.
    static let refused: [(name: String, target: String, reached: String)] = [
        ("loopback", "http://127.0.0.1:9000/secret", "127.0.0.1, a loopback"),
        ("loopback-v6", "http://[::1]:9000/secret", "::1, a loopback"),
        ("mapped", "http://[::ffff:127.0.0.1]:9000/secret", "::ffff:127.0.0.1, a loopback"),
        ("unspecified", "http://0.0.0.0:9000/secret", "127.0.0.1, a loopback"),
        ("localhost-name", "http://localhost:9000/secret", "a loopback"),
        ("metadata", "http://169.254.169.254:9000/secret", "169.254.169.254, a link-local"),
        ("private", "http://10.1.2.3:9000/secret", "10.1.2.3, a private"),
        ("shared", "http://100.64.1.1:9000/secret", "100.64.1.1, a shared (carrier-grade NAT)"),
        ("unique-local", "http://[fd00::7]:9000/secret", "fd00::7, a private"),
        ("benchmarking", "http://198.18.0.7:9000/secret", "198.18.0.7, a special-purpose"),
        ("documentation", "http://203.0.113.7:9000/secret", "203.0.113.7, a special-purpose"),
    ]

    @Test(.enabled(if: RedirectPolicyTests.canRun, "needs root, unshare and ip to make a network namespace"))
    func aRemoteServerCannotRedirectToAnInternalAddress() async throws {
        var handlers = Self.refused.map { handler in
            """
            [[handler]]
            name = "\(handler.name)"
            kind = "http"
            url = "http://\(RemoteAddresses.first):9000/goto/\(handler.target)"

            """
        }
        // Allowed: global to global, and private to private (IPv4 to IPv6 unique-local).
        handlers.append("""
            [[handler]]
            name = "global-to-global"
            kind = "http"
            url = "http://\(RemoteAddresses.first):9000/goto/http://\(RemoteAddresses.second):9000/secret"

            [[handler]]
            name = "private-to-private"
            kind = "http"
            url = "http://10.1.2.3:9000/goto/http://[fd00::7]:9000/secret"

            """)
        let daemon = try DaemonProcess(handlers: handlers.joined(separator: "\n"))
        defer { daemon.directory.remove() }
        let script = daemon.directory.file("server.py"), ready = daemon.directory.file("server.ready")
        try Self.server.write(toFile: script, atomically: true, encoding: .utf8)
        let ip = try #require(Self.ip)
        let setup = """
            set -e
            \(ip) link set lo up
            for a in \(RemoteAddresses.first) \(RemoteAddresses.second) 169.254.169.254 10.1.2.3 100.64.1.1 198.18.0.7 203.0.113.7; do \(ip) addr add $a/32 dev lo; done
            \(ip) -6 addr add fd00::7/128 dev lo nodad
            python3 '\(script)' '\(ready)' &
            for i in $(seq 100); do [ -e '\(ready)' ] && break; sleep 0.1; done
            "$@"
            """
        let result = try await ChildProcess.runWithoutBlocking(try #require(Self.unshare), [
            // A PID namespace too, so the server ends with it (`--kill-child`).
            "--net", "--pid", "--fork", "--kill-child", "/bin/sh", "-c", setup, "sh", TestBinaries.path(of: "fetchd"), "--config", daemon.configPath, "--once",
        ])
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        for handler in Self.refused {
            let last = try state.history(of: handler.name, limit: 1).first
            #expect(last?.result.name == "failed", "\(handler.name): \(String(describing: last)) \(result.output)")
            let reason = last?.result.reason ?? ""
            #expect(reason.hasPrefix("forbidden redirect: \(handler.target) leads to "), "\(handler.name): \(reason)")
            #expect(reason.contains("\(handler.reached) address, and the configured URL's host is not one"), "\(handler.name): \(reason)")
            #expect(!FileManager.default.fileExists(atPath: daemon.cachePath + "/\(handler.name)/latest"), "\(handler.name) published")
        }
        for name in ["global-to-global", "private-to-private"] {
            let last = try state.history(of: name, limit: 1).first
            #expect(last?.result == .newData, "\(name): \(String(describing: last)) \(result.output)")
            #expect((try? String(contentsOfFile: daemon.cachePath + "/\(name)/latest/content", encoding: .utf8)) == "internal only\n")
        }
    }
}
