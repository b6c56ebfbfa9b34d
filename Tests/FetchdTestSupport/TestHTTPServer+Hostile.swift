import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Misbehaving servers for the HTTP limits (Python on 127.0.0.1, started per test). Routes:
/// `/redirect/N` (a chain of N redirects), `/loop` (redirects to itself), `/to-file` (redirects
/// to a `file://` URL), `/stall` (headers and 10 bytes, then silence), `/drop` (promises
/// 100 000 bytes, sends 1000 and closes), `/gzip-bomb` (50 MB of zeros, gzip-encoded: ~50 KB
/// on the wire), `/headers-forever` (distinct header lines without end), `/huge-header-line`
/// (one header line of 1 MiB), `/endless` (a body
/// without a length that never ends), `/goto/URL` (302 to URL), `/echo-headers` (the request's
/// headers as the body). With a certificate and key it serves HTTPS.
extension TestHTTPServer.Script {
    /// The hostile server's script; argv: port, then certificate and key for HTTPS.
    public static let hostile = TestHTTPServer.Script(#"""
        import gzip, http.server, socketserver, ssl, sys, time
        BOMB = []  # built on first use: compressing 50 MB at start would delay every test's server
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def head(self, code, headers):
                self.send_response(code)
                for k, v in headers.items(): self.send_header(k, v)
                self.end_headers()
            def do_GET(self):
                p = self.path
                if p.startswith("/redirect/"):
                    n = int(p.rsplit("/", 1)[1])
                    if n == 0:
                        self.head(200, {"Content-Length": "4"}); return self.wfile.write(b"done")
                    return self.head(302, {"Location": "/redirect/%d" % (n - 1), "Content-Length": "0"})
                if p.startswith("/goto/"):
                    return self.head(302, {"Location": p[6:], "Content-Length": "0"})
                if p == "/echo-headers":
                    body = str(self.headers).encode()
                    self.head(200, {"Content-Length": str(len(body))}); return self.wfile.write(body)
                if p == "/loop": return self.head(302, {"Location": "/loop", "Content-Length": "0"})
                if p == "/to-file": return self.head(302, {"Location": "file:///etc/passwd", "Content-Length": "0"})
                if p == "/stall":
                    self.head(200, {"Content-Length": "1000"}); self.wfile.write(b"x" * 10); self.wfile.flush()
                    time.sleep(60); return
                if p == "/drop":
                    self.head(200, {"Content-Length": "100000"}); self.wfile.write(b"y" * 1000); self.wfile.flush()
                    self.close_connection = True; return
                if p == "/gzip-bomb":
                    if not BOMB: BOMB.append(gzip.compress(b"\0" * (50 * 1024 * 1024), 1))
                    self.head(200, {"Content-Encoding": "gzip", "Content-Length": str(len(BOMB[0]))})
                    return self.wfile.write(BOMB[0])
                if p == "/headers-forever":
                    self.send_response(200)
                    try:
                        for i in range(10 ** 7): self.send_header("X-Filler-%d" % i, "z" * 100); self.flush_headers()
                    except OSError: pass
                    return
                if p == "/huge-header-line":
                    self.send_response(200)
                    try:
                        self.send_header("X-Huge", "h" * (1024 * 1024)); self.send_header("Content-Length", "2")
                        self.end_headers(); self.wfile.write(b"ok")
                    except OSError: pass
                    return
                if p == "/endless":
                    self.close_connection = True
                    self.send_response(200); self.end_headers()
                    try:
                        while True: self.wfile.write(b"e" * 65536)
                    except OSError: pass
                    return
                self.head(200, {"Content-Length": "2"}); self.wfile.write(b"ok")
        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
        server = S(("127.0.0.1", int(sys.argv[1])), H)
        if len(sys.argv) > 3:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[2], sys.argv[3])
            server.socket = context.wrap_socket(server.socket, server_side=True)
        server.serve_forever()
        """#)
}

extension TestHTTPServer {

    /// Starts the hostile server (`Script.hostile`; HTTPS when `certificate` and `key` are given).
    public static func hostile(certificate: String? = nil, key: String? = nil) throws -> TestHTTPServer {
        try TestHTTPServer(.hostile, arguments: [certificate, key].compactMap { $0 })
    }

    /// A self-signed certificate for 127.0.0.1 in `directory`: (certificate, key) paths.
    public static func selfSignedCertificate(in directory: TemporaryDirectory) throws -> (String, String) {
        let certificate = directory.file("cert.pem"), key = directory.file("key.pem")
        let pid = try spawnProcess(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                    "-keyout", key, "-out", certificate])
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        guard FileManager.default.fileExists(atPath: certificate) else { throw ServerError.didNotStart }
        return (certificate, key)
    }
}
