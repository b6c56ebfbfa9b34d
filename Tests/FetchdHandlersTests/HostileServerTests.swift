import FetchdCore
import FetchdHandlers
import FetchdTestSupport
import Foundation
import Testing

extension ProcessTests {
    /// The HTTP handler's limits against servers that misbehave on purpose.
    @Suite("HTTP handler against hostile servers")
    struct HostileServerTests {
        static let deadline: Duration = .seconds(3)

        /// Fetches `path` from a fresh hostile server and returns the outcome and elapsed time.
        private func fetch(_ path: String, maxBytes: Int = 1024 * 1024, https: Bool = false,
                           caFile: String? = nil, backstop: Duration = .seconds(1)) async throws -> (FetchRunner.Outcome, Duration) {
            let directory = try TemporaryDirectory("fetchd-hdl")
            var certificate: (String, String)?
            if https { certificate = try TestHTTPServer.selfSignedCertificate(in: directory) }
            let server = try TestHTTPServer.hostile(certificate: certificate?.0, key: certificate?.1)
            defer { server.stop() }
            var handler = HTTPHandler(url: "\(https ? "https" : "http")://127.0.0.1:\(server.port)\(path)",
                                      maxBytes: maxBytes, allowFileURLs: false)
            handler.caFile = caFile == "generated" ? certificate?.0 : caFile
            handler.backstopMilliseconds = Int(backstop / .milliseconds(1))
            return await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
        }

        private func reason(_ outcome: FetchRunner.Outcome) -> String {
            if case .failed(let reason, _)? = outcome.completion { return reason }
            return "not a failure: \(String(describing: outcome.completion)), expired: \(outcome.expired)"
        }

        @Test func aRedirectChainIsFollowed() async throws {
            let (outcome, _) = try await fetch("/redirect/3")
            guard case .newData(_, let details)? = outcome.completion else {
                Issue.record("expected newData, got \(String(describing: outcome.completion))"); return
            }
            #expect(details["final_url"]?.hasSuffix("/redirect/0") == true)
        }

        @Test func aRedirectLoopFailsAsTooManyRedirects() async throws {
            let (outcome, elapsed) = try await fetch("/loop")
            #expect(reason(outcome).contains("too many redirects"), "\(reason(outcome))")
            #expect(elapsed < Self.deadline)
        }

        @Test func aRedirectToFileIsRefused() async throws {
            let (outcome, _) = try await fetch("/to-file")
            #expect(reason(outcome).contains("forbidden scheme") || reason(outcome).contains("Protocol"),
                    "\(reason(outcome))")
        }

        @Test func aServerStallingAfterTheHeadersEndsByTheDeadline() async throws {
            let (outcome, elapsed) = try await fetch("/stall")
            #expect(outcome.expired || reason(outcome).contains("timeout"), "\(reason(outcome))")
            // The server stalls for good: ending at all, within seconds of the deadline, is the
            // point (the next test pins the moment down without timing the machine).
            #expect(elapsed < Self.deadline + .seconds(3))
        }

        @Test func aStalledTransferIsExpiredAtTheDeadlineNotAtLibcurlsLimit() async throws {
            // libcurl's own limit 20 s past the deadline: only the context's expiration (the
            // handler's stopper) can end the transfer near the deadline. (With the usual 1 s
            // backstop the two could not be told apart on a loaded machine.)
            let backstop: Duration = .seconds(20)
            let (outcome, elapsed) = try await fetch("/stall", backstop: backstop)
            #expect(outcome.expired, "\(reason(outcome))")
            #expect(outcome.completion == nil)
            #expect(elapsed < Self.deadline + backstop / 2, "ended after \(elapsed.inSeconds) s")
        }

        @Test func aConnectionDroppedMidBodyFails() async throws {
            let (outcome, _) = try await fetch("/drop")
            #expect(outcome.completion != nil && reason(outcome).hasPrefix("incomplete response"), "\(reason(outcome))")
        }

        @Test func aGzipBombStopsAtMaxBytesOfDecodedData() async throws {
            let (outcome, elapsed) = try await fetch("/gzip-bomb", maxBytes: 1024 * 1024)
            #expect(reason(outcome).contains("too large"), "\(reason(outcome))")
            #expect(elapsed < Self.deadline)
        }

        @Test func headersWithoutEndStopAtTheHeaderLimit() async throws {
            let (outcome, elapsed) = try await fetch("/headers-forever")
            #expect(reason(outcome).contains("response headers exceed"), "\(reason(outcome))")
            #expect(elapsed < Self.deadline)
        }

        /// libcurl ends a 1 MiB header line as "out of memory": reported as what it is.
        @Test func aHugeHeaderLineIsReportedAsTooLarge() async throws {
            let (outcome, elapsed) = try await fetch("/huge-header-line")
            #expect(reason(outcome) == "too large: a response header line exceeds 102400 bytes", "\(reason(outcome))")
            #expect(elapsed < Self.deadline)
        }

        @Test func aBodyWithoutEndStopsAtMaxBytes() async throws {
            let (outcome, elapsed) = try await fetch("/endless", maxBytes: 256 * 1024)
            #expect(reason(outcome).contains("too large"), "\(reason(outcome))")
            #expect(elapsed < Self.deadline)
        }

        @Test func aSelfSignedCertificateIsRejectedUnlessItsCAIsConfigured() async throws {
            let (rejected, _) = try await fetch("/", https: true)
            #expect(reason(rejected).hasPrefix("TLS") || reason(rejected).contains("certificate"), "\(reason(rejected))")
            let (accepted, _) = try await fetch("/", https: true, caFile: "generated")
            guard case .newData? = accepted.completion else {
                Issue.record("with ca_file the fetch should succeed: \(reason(accepted))"); return
            }
        }

        /// An https URL redirected to http is refused before the request is sent.
        @Test func aRedirectFromHTTPSToHTTPIsRefused() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let certificate = try TestHTTPServer.selfSignedCertificate(in: directory)
            let secure = try TestHTTPServer.hostile(certificate: certificate.0, key: certificate.1)
            defer { secure.stop() }
            let plain = try TestHTTPServer.hostile()
            defer { plain.stop() }
            let target = "http://127.0.0.1:\(plain.port)/echo-headers"
            var handler = HTTPHandler(url: "https://127.0.0.1:\(secure.port)/goto/\(target)", maxBytes: 1024, allowFileURLs: false)
            handler.caFile = certificate.0
            let (outcome, _) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
            #expect(reason(outcome) == "forbidden redirect: \(target) would drop from https to http", "\(reason(outcome))")
        }

        /// Custom headers go on with a redirect to the same host, not to another one (here
        /// `localhost` after `127.0.0.1`, both loopback, so the address policy allows it).
        @Test func customHeadersAreNotSentOnToAnotherHost() async throws {
            let server = try TestHTTPServer.hostile()
            defer { server.stop() }
            for (host, keeps) in [("127.0.0.1", true), ("localhost", false)] {
                let directory = try TemporaryDirectory("fetchd-hdl")
                let target = "http://\(host):\(server.port)/echo-headers"
                var handler = HTTPHandler(url: "http://127.0.0.1:\(server.port)/goto/\(target)", maxBytes: 4096, allowFileURLs: false)
                handler.headers = ["X-Api-Key": "k-123"]
                let context = makeContext(in: directory, deadline: Self.deadline)
                let (outcome, _) = await timedRun(handler, context: context)
                guard case .newData? = outcome.completion else {
                    Issue.record("\(host): \(reason(outcome))"); continue
                }
                let echoed = try String(contentsOfFile: context.outputPath, encoding: .utf8)
                #expect(echoed.contains("X-Api-Key: k-123") == keeps, "\(host): \(echoed)")
                #expect(echoed.contains("Host: \(host)"), "\(echoed)")
            }
        }
    }
}
