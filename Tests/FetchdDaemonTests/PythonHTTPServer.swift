import FetchdTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP server on 127.0.0.1 (Python), started per test. It picks its own port and
/// prints it. Two scripts: `conditional` and `counting`.
final class PythonHTTPServer {
    let process = Process()
    let port: Int

    /// For conditional-request tests. Routes:
    /// - `/etag`: body `etag body <version>`, `ETag: "v<version>"`, 304 when If-None-Match matches;
    /// - `/lastmod`: `Last-Modified` fixed, 304 when If-Modified-Since equals it;
    /// - `/echo`: the request's headers as the body;
    /// - `/retry`: 429 with `Retry-After: 120`;
    /// - `/bump`: makes `/etag` serve the next version.
    static let conditional = #"""
        import http.server, sys
        version = [1]
        LAST = "Sat, 21 Nov 2026 08:00:00 GMT"
        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a): pass
            def send(self, code, body=b"", headers={}):
                self.send_response(code)
                for k, v in headers.items(): self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def do_GET(self):
                if self.path == "/etag":
                    tag = '"v%d"' % version[0]
                    if self.headers.get("If-None-Match") == tag: return self.send(304, headers={"ETag": tag})
                    return self.send(200, b"etag body %d" % version[0], {"ETag": tag})
                if self.path == "/lastmod":
                    if self.headers.get("If-Modified-Since") == LAST: return self.send(304)
                    return self.send(200, b"lastmod body", {"Last-Modified": LAST})
                if self.path == "/echo":
                    return self.send(200, str(self.headers).encode())
                if self.path == "/retry":
                    return self.send(429, b"slow down", {"Retry-After": "120"})
                if self.path == "/bump":
                    version[0] += 1
                    return self.send(200, b"bumped")
                self.send(404)
        server = http.server.HTTPServer(("127.0.0.1", 0), H)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    /// For connection-limit tests: HTTP/1.1 with keep-alive, many threads. Routes:
    /// - `/slow/NAME`, `/fast/NAME`: answer after 1.5 s (long enough for a loaded machine to
    ///   start the others meanwhile) or at once;
    /// - `/stats`: JSON with, per Host header, the most requests it had in flight at once
    ///   (`max_active`), and the connections accepted in all (`connections`).
    static let counting = #"""
        import http.server, json, socketserver, threading, time
        lock = threading.Lock()
        active, peak, connections = {}, {}, [0]
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def setup(self):
                super().setup()
                with lock: connections[0] += 1
            def send(self, body):
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def do_GET(self):
                if self.path == "/stats":
                    with lock: return self.send(json.dumps({"max_active": peak, "connections": connections[0]}).encode())
                host = self.headers.get("Host", "").split(":")[0]
                with lock:
                    active[host] = active.get(host, 0) + 1
                    peak[host] = max(peak.get(host, 0), active[host])
                if self.path.startswith("/slow/"): time.sleep(1.5)
                with lock: active[host] -= 1
                self.send(b"body of " + self.path.encode())
        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
        server = S(("127.0.0.1", 0), H)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    /// Starts a server running `script` and reads the port it chose.
    init(script: String = PythonHTTPServer.conditional) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        var line = Data()
        while let byte = try pipe.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            line.append(byte)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else { throw CocoaError(.fileReadCorruptFile) }
        self.port = port
    }

    /// The URL of `path` on this server.
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// GETs `path` and returns the body (through Python's urllib: Foundation on Linux has no
    /// HTTP client without FoundationNetworking).
    @discardableResult
    func get(_ path: String) throws -> String {
        let result = try ChildProcess.run("/usr/bin/env", ["python3", "-c",
            "import urllib.request, sys; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())", url(path)])
        if result.status != 0 { throw CocoaError(.fileReadUnknown) }
        return result.output
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
