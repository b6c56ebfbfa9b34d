import CurlKit
import FetchdTestSupport
import Foundation
import Testing

/// libcurl handles are reused across fetches: whatever one transfer leaves in a handle must not
/// break the next one on it.
struct HTTPClientReuseTests {
    /// A refused redirect leaves its receive buffer in the handle (`curl_easy_reset` keeps it),
    /// and libcurl 7.88 then refuses `CURLOPT_BUFFERSIZE` on that handle: a background transfer
    /// (which sets it) taking the handle next failed with "curl error 43: A libcurl function was
    /// given a bad argument". Seen under load in the handler suite, where the hostile-server
    /// tests and the transfer tests share `HTTPClient.shared`.
    @Test func aTransferWithItsOwnBufferSizeRunsAfterAnyEarlierFetch() async throws {
        let server = try TestHTTPServer.hostile()
        defer { server.stop() }
        let directory = try TemporaryDirectory("fetchd-hdl")
        // One handle at a time, so the second fetch gets the first one's handle if any.
        let client = HTTPClient(limits: .init(maxConnections: 1, maxHostConnections: 1))
        defer { client.shutdown() }
        let base = "http://127.0.0.1:\(server.port)"
        for round in 0..<3 {
            let refused = HTTPRequest(url: "\(base)/to-file", outputPath: directory.file("refused-\(round)"),
                                      userAgent: "test", timeoutMilliseconds: 10_000, maxBytes: 1000)
            await #expect(throws: HTTPFailure.self) { try await client.fetch(refused) }
            var bulk = HTTPRequest(url: "\(base)/redirect/0", outputPath: directory.file("bulk-\(round)"),
                                   userAgent: "test", timeoutMilliseconds: 10_000, maxBytes: 1000)
            bulk.receiveBufferBytes = 512 * 1024
            do {
                let response = try await client.fetch(bulk)
                #expect(response.status == 200)
                #expect(try String(contentsOfFile: directory.file("bulk-\(round)"), encoding: .utf8) == "done")
            } catch {
                Issue.record("round \(round): the transfer after a refused redirect failed: \(error)")
            }
            // And a plain fetch after the transfer.
            let plain = HTTPRequest(url: "\(base)/redirect/1", outputPath: directory.file("plain-\(round)"),
                                    userAgent: "test", timeoutMilliseconds: 10_000, maxBytes: 1000)
            #expect(try await client.fetch(plain).status == 200)
        }
    }
}
