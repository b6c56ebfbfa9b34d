import Foundation

extension TestHTTPServer {
    /// A static file server for `directory` (`python3 -m http.server`).
    public static func files(in directory: String) throws -> TestHTTPServer {
        try TestHTTPServer { port in
            ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", directory, String(port)]
        }
    }

    /// A server that accepts connections and never answers.
    public static func stalled() throws -> TestHTTPServer {
        let script = """
            import socket, sys
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", int(sys.argv[1])))
            server.listen(16)
            held = []
            while True:
                connection, _ = server.accept()
                held.append(connection)
            """
        return try TestHTTPServer(Script(script))
    }

    /// A server answering every request with an HTTP/1.0 200 whose body of `bodyBytes` bytes
    /// has no Content-Length (it ends when the connection closes).
    public static func unsizedBody(bodyBytes: Int) throws -> TestHTTPServer {
        let script = """
            import socket, sys
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", int(sys.argv[1])))
            server.listen(16)
            body = b"a" * int(sys.argv[2])
            while True:
                connection, _ = server.accept()
                try:
                    connection.settimeout(2)
                    connection.recv(65536)
                    connection.sendall(b"HTTP/1.0 200 OK\\r\\nContent-Type: text/plain\\r\\n\\r\\n" + body)
                except OSError:
                    pass
                connection.close()
            """
        return try TestHTTPServer(Script(script), arguments: [String(bodyBytes)])
    }
}

extension TestHTTPServer.Script {
    /// For conditional-request tests. Routes:
    /// - `/etag`: body `etag body <version>`, `ETag: "v<version>"`, 304 when If-None-Match matches;
    /// - `/lastmod`: `Last-Modified` fixed, 304 when If-Modified-Since equals it;
    /// - `/echo`: the request's headers as the body;
    /// - `/retry`: 429 with `Retry-After: 120`;
    /// - `/bump`: makes `/etag` serve the next version;
    /// - `/etag-cr`, `/lastmod-cr`: a 200 whose ETag or Last-Modified holds a bare CR and a
    ///   second header after it; each request's If-None-Match and If-Modified-Since are noted;
    /// - `/always-304`: 304 whatever the request;
    /// - `/seen`: a JSON list of the conditional headers of each request to the `-cr` routes
    ///   ("" for none).
    public static let conditional = TestHTTPServer.Script(#"""
        import http.server, json, sys
        version = [1]
        seen = []
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
                if self.path in ("/etag-cr", "/lastmod-cr"):
                    seen.append(self.headers.get("If-None-Match", "") + self.headers.get("If-Modified-Since", ""))
                    name = "ETag" if self.path == "/etag-cr" else "Last-Modified"
                    value = '"abc"' if self.path == "/etag-cr" else LAST
                    return self.send(200, b"cr body", {name: value + "\rX-Injected: evil"})
                if self.path == "/always-304":
                    return self.send(304)
                if self.path == "/seen":
                    return self.send(200, json.dumps(seen).encode())
                self.send(404)
        server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
        server.serve_forever()
        """#)

    /// For connection-limit tests: HTTP/1.1 with keep-alive, many threads. Routes:
    /// - `/slow/NAME`, `/fast/NAME`: answer after 1.5 s (long enough for a loaded machine to
    ///   start the others meanwhile) or at once; `?seconds=S` on a slow one waits S seconds,
    ///   `?close` ends the connection after the answer (`Connection: close`, as an HTTP/1.0
    ///   server does);
    /// - `/goto/URL`: a 302 to URL, at once;
    /// - `/stats`: JSON with, per Host header, the most requests it had in flight at once
    ///   (`max_active`), and the connections that made a request (`connections`).
    public static let counting = TestHTTPServer.Script(#"""
        import http.server, json, socketserver, sys, threading, time, urllib.parse
        lock = threading.Lock()
        active, peak, connections = {}, {}, [0]
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def setup(self):
                super().setup()
                self.counted = False
            def send(self, body, close=False):
                self.send_response(200)
                if close:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def do_GET(self):
                if not self.counted:  # a connection that asks for something (the launcher's probe does not)
                    self.counted = True
                    with lock: connections[0] += 1
                if self.path == "/stats":
                    with lock: return self.send(json.dumps({"max_active": peak, "connections": connections[0]}).encode())
                if self.path.startswith("/goto/"):
                    self.send_response(302)
                    self.send_header("Location", self.path[6:])
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                host = self.headers.get("Host", "").split(":")[0]
                with lock:
                    active[host] = active.get(host, 0) + 1
                    peak[host] = max(peak.get(host, 0), active[host])
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query, keep_blank_values=True)
                if self.path.startswith("/slow/"): time.sleep(float(query.get("seconds", ["1.5"])[0]))
                with lock: active[host] -= 1
                self.send(b"body of " + self.path.encode(), close="close" in query)
        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
        server = S(("127.0.0.1", int(sys.argv[1])), H)
        server.serve_forever()
        """#)
}
