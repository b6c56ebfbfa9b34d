import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP server on 127.0.0.1 (Python) for conditional-request tests. It picks its own
/// port and prints it. Routes:
/// - `/etag`: body `etag body <version>`, `ETag: "v<version>"`, 304 when If-None-Match matches;
/// - `/lastmod`: `Last-Modified` fixed, 304 when If-Modified-Since equals it;
/// - `/echo`: the request's headers as the body;
/// - `/retry`: 429 with `Retry-After: 120`;
/// - `/bump`: makes `/etag` serve the next version.
final class ConditionalServer {
    let process = Process()
    let port: Int

    static let script = #"""
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

    /// Starts the server and reads the port it chose.
    init() throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.script]
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

    /// GETs `path` (through Python's urllib: Foundation on Linux has no HTTP client without
    /// FoundationNetworking).
    func get(_ path: String) throws {
        let result = try DaemonProcess.run("/usr/bin/env", ["python3", "-c",
            "import urllib.request, sys; urllib.request.urlopen(sys.argv[1]).read()", url(path)])
        if result.status != 0 { throw CocoaError(.fileReadUnknown) }
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
