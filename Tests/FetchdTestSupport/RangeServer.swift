import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real HTTP/1.1 server on 127.0.0.1 (Python, threaded) serving one file with byte ranges and
/// `If-Range`, for background-transfer tests. Started per test; `stop()` kills it.
///
/// Control routes (GET): `/mode/range` (default) and `/mode/norange` (ignore Range, always 200);
/// `/serve/NAME` (serve `NAME` from the folder: the resource "changes"); `/rate/N` (send at most
/// N bytes per second, 0 = unlimited); `/fail/N` (the next N requests of the file get 503);
/// `/drop/N` (the next request of the file loses its connection after N body bytes: a network loss);
/// `/stats` (JSON: `sent` body bytes written in all, `requests`: `[range start or -1, status]`).
/// The file is `/file`; its ETag is derived from its name and size, so serving another file
/// changes it.
public final class RangeServer: Sendable {
    /// The server process.
    private let server: TestHTTPServer
    /// The port it listens on.
    public var port: Int { server.port }

    /// The script; argv: port, folder, first file name.
    static let script = #"""
        import http.server, json, os, socketserver, sys, threading, time
        folder, current = sys.argv[2], [sys.argv[3]]
        mode, rate, fail, drop = ["range"], [0], [0], [0]
        lock = threading.Lock()
        stats = {"sent": 0, "requests": []}
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def small(self, code, body=b"", headers={}):
                self.send_response(code)
                for k, v in headers.items(): self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def do_GET(self):
                parts = self.path.strip("/").split("/")
                if parts[0] == "mode": mode[0] = parts[1]; return self.small(200, b"ok")
                if parts[0] == "serve": current[0] = parts[1]; return self.small(200, b"ok")
                if parts[0] == "rate": rate[0] = int(parts[1]); return self.small(200, b"ok")
                if parts[0] == "fail": fail[0] = int(parts[1]); return self.small(200, b"ok")
                if parts[0] == "drop": drop[0] = int(parts[1]); return self.small(200, b"ok")
                if parts[0] == "stats":
                    with lock: return self.small(200, json.dumps(stats).encode())
                if parts[0] != "file": return self.small(404, b"no such route")
                path = os.path.join(folder, current[0])
                size = os.path.getsize(path)
                etag = '"%s-%d"' % (current[0], size)
                start, status = 0, 200
                wanted = self.headers.get("Range")
                if wanted and mode[0] == "range" and self.headers.get("If-Range", etag) == etag:
                    start = int(wanted.split("=")[1].split("-")[0])
                    status = 206
                with lock:
                    stats["requests"].append([start if wanted else -1, status])
                    failing = fail[0] > 0
                    if failing: fail[0] -= 1
                if failing: return self.small(503, b"<html>busy, try later</html>" * 100, {"Retry-After": "1"})
                if status == 206 and start >= size:
                    return self.small(416, b"", {"Content-Range": "bytes */%d" % size})
                self.send_response(status)
                self.send_header("ETag", etag)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(size - start))
                if status == 206: self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
                self.end_headers()
                with lock:
                    cut, drop[0] = drop[0], 0
                with open(path, "rb") as f:
                    f.seek(start)
                    began = time.monotonic(); sent = 0
                    while True:
                        chunk = f.read(64 * 1024)
                        if not chunk: break
                        if cut and sent + len(chunk) > cut:
                            self.wfile.write(chunk[:cut - sent]); self.wfile.flush()
                            with lock: stats["sent"] += cut - sent
                            self.close_connection = True
                            self.connection.shutdown(2)
                            return
                        try:
                            self.wfile.write(chunk)
                        except OSError:
                            return
                        sent += len(chunk)
                        with lock: stats["sent"] += len(chunk)
                        if rate[0] > 0:
                            ahead = sent / rate[0] - (time.monotonic() - began)
                            if ahead > 0: time.sleep(ahead)
        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
        server = S(("127.0.0.1", int(sys.argv[1])), H)
        server.serve_forever()
        """#

    /// Starts a server for `file` in `folder`.
    public init(folder: String, file: String) throws {
        server = try TestHTTPServer(TestHTTPServer.Script(Self.script), arguments: [folder, file])
    }

    /// The file's URL.
    public var url: String { "http://127.0.0.1:\(port)/file" }

    /// Calls a control route, e.g. `control("mode/norange")`; returns its body.
    @discardableResult
    public func control(_ route: String) async throws -> String {
        let reply = await RawHTTPClient.exchange(port: port, RawHTTPClient.get("/" + route))
        guard reply.status == 200 else { throw POSIXError(.EPROTO) }
        return reply.body
    }

    /// Body bytes sent in all, and each request's range start (-1: none) and status.
    public func stats() async throws -> (sent: Int, requests: [(start: Int, status: Int)]) {
        let body = try await control("stats")
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] ?? [:]
        let requests = (object["requests"] as? [[Int]] ?? []).map { ($0[0], $0[1]) }
        return (object["sent"] as? Int ?? 0, requests)
    }

    /// Kills the server.
    public func stop() { server.stop() }
}
