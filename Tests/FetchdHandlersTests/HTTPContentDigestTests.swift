import Crypto
import FetchdCore
import FetchdHandlers
import FetchdTestSupport
import Foundation
import Testing

extension ProcessTests {
    /// The digest an http fetch reports from hashing the body as it is written must be the
    /// file's own: the daemon publishes it as the snapshot's `sha256` without reading the file.
    @Suite("HTTP content digest")
    struct HTTPContentDigestTests {
        /// A server whose `/plain` is 310 KB sent in 4 KiB writes and whose `/gzip` is the same bytes
        /// gzip-encoded (the digest must cover the decoded bytes, which are what is written).
        private static let script = """
            import gzip, http.server, socketserver, sys
            BODY = b"".join(b"line %06d of the digest test\\n" % i for i in range(10000))
            class Handler(http.server.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"
                def do_GET(self):
                    body = gzip.compress(BODY) if self.path == "/gzip" else BODY
                    self.send_response(200)
                    if self.path == "/gzip": self.send_header("Content-Encoding", "gzip")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    for start in range(0, len(body), 4096): self.wfile.write(body[start:start + 4096])
                def log_message(self, *args): pass
            socketserver.TCPServer.allow_reuse_address = True
            socketserver.ThreadingTCPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
            """

        @Test(arguments: ["/plain", "/gzip"])
        func theReportedDigestIsTheFiles(path: String) async throws {
            let server = try TestHTTPServer(TestHTTPServer.Script(Self.script))
            defer { server.stop() }
            let directory = try TemporaryDirectory("fetchd-hdl")
            let handler = HTTPHandler(url: "http://127.0.0.1:\(server.port)\(path)", maxBytes: 1 << 20, allowFileURLs: false)
            let outcome = await FetchRunner().run(handler, context: makeContext(in: directory, deadline: .seconds(10)))
            guard case .newData? = outcome.completion else {
                Issue.record("expected newData, got \(String(describing: outcome.completion))")
                return
            }
            let written = try #require(FileManager.default.contents(atPath: directory.file("output")))
            #expect(written.count == 310_000)  // 10,000 lines of 31 bytes
            #expect(outcome.contentDigest == FetchContext.ContentDigest(
                sha256: HexText.lowercase(SHA256.hash(data: written)), bytes: written.count))
        }
    }
}
