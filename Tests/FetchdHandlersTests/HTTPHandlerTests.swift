import FetchdCore
import FetchdHandlers
import FetchdTestSupport
import Foundation
import Testing

extension ProcessTests {
    /// The HTTP handler against real servers on 127.0.0.1 (python3).
    @Suite("HTTP handler on loopback")
    struct HTTPHandlerTests {
        /// The deadline used by these tests.
        static let deadline: Duration = .seconds(2)
        /// The upper bound on a run that should end on its own: deadline plus margin.
        static let bound: Duration = deadline + .seconds(1)

        /// Runs `body` with a file server for a new directory holding `files`.
        private func withFileServer(
            _ files: [String: Data], _ body: (TestHTTPServer, TemporaryDirectory) async throws -> Void
        ) async throws {
            let site = try TemporaryDirectory("fetchd-hdl")
            for (name, contents) in files {
                try contents.write(to: URL(fileURLWithPath: site.file(name)))
            }
            let server = try TestHTTPServer.files(in: site.path)
            defer { server.stop() }
            try await body(server, site)
        }

        /// A 200 writes the body to the output path and completes `newData` with the status.
        @Test func okWritesTheBody() async throws {
            let body = Data("hello from the loopback server\n".utf8)
            try await withFileServer(["hello.txt": body]) { server, _ in
                let directory = try TemporaryDirectory("fetchd-hdl")
                let handler = HTTPHandler(url: "http://127.0.0.1:\(server.port)/hello.txt",
                                          maxBytes: 1024, allowFileURLs: false)
                let (outcome, elapsed) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
                guard case .newData(let contentType, let details)? = outcome.completion else {
                    Issue.record("expected newData, got \(String(describing: outcome.completion))")
                    return
                }
                #expect(details["status"] == "200")
                #expect(details["final_url"] == "http://127.0.0.1:\(server.port)/hello.txt")
                #expect(contentType?.hasPrefix("text/plain") == true)
                #expect(FileManager.default.contents(atPath: directory.file("output")) == body)
                expectElapsed(elapsed, in: .zero ... Self.bound)
            }
        }

        /// A 404 is `failed` with the status.
        @Test func notFoundFails() async throws {
            try await withFileServer([:]) { server, _ in
                let directory = try TemporaryDirectory("fetchd-hdl")
                let handler = HTTPHandler(url: "http://127.0.0.1:\(server.port)/missing",
                                          maxBytes: 1 << 20, allowFileURLs: false)
                let (outcome, _) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
                #expect(outcome.failureReason == "HTTP 404")
                #expect(outcome.details?["status"] == "404")
            }
        }

        /// A body larger than maxBytes is `failed` as too large.
        @Test func bodyOverTheLimitFails() async throws {
            try await withFileServer(["big.bin": Data(repeating: 0x61, count: 64 * 1024)]) { server, _ in
                let directory = try TemporaryDirectory("fetchd-hdl")
                let handler = HTTPHandler(url: "http://127.0.0.1:\(server.port)/big.bin",
                                          maxBytes: 1000, allowFileURLs: false)
                let (outcome, _) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
                let reason = try #require(outcome.failureReason)
                #expect(reason.contains("too large"))
            }
        }

        /// A body without Content-Length is stopped as soon as it passes maxBytes.
        @Test func unsizedBodyOverTheLimitFails() async throws {
            let server = try TestHTTPServer.unsizedBody(bodyBytes: 256 * 1024)
            defer { server.stop() }
            let directory = try TemporaryDirectory("fetchd-hdl")
            let handler = HTTPHandler(url: "http://127.0.0.1:\(server.port)/stream", maxBytes: 1000, allowFileURLs: false)
            let (outcome, _) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
            let reason = try #require(outcome.failureReason)
            #expect(reason.contains("too large"))
            let written = FileManager.default.contents(atPath: directory.file("output"))?.count ?? 0
            #expect(written <= 1000)
        }

        /// A body without Content-Length under the limit is read to the end.
        @Test func unsizedBodyUnderTheLimitIsAccepted() async throws {
            let server = try TestHTTPServer.unsizedBody(bodyBytes: 5000)
            defer { server.stop() }
            let directory = try TemporaryDirectory("fetchd-hdl")
            let handler = HTTPHandler(url: "http://127.0.0.1:\(server.port)/stream", maxBytes: 5000, allowFileURLs: false)
            let (outcome, _) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
            #expect(outcome.details?["status"] == "200")
            #expect(FileManager.default.contents(atPath: directory.file("output")) == Data(repeating: 0x61, count: 5000))
        }

        /// A body of exactly maxBytes is accepted.
        @Test func bodyAtTheLimitIsAccepted() async throws {
            let body = Data(repeating: 0x62, count: 1000)
            try await withFileServer(["exact.bin": body]) { server, _ in
                let directory = try TemporaryDirectory("fetchd-hdl")
                let handler = HTTPHandler(url: "http://127.0.0.1:\(server.port)/exact.bin",
                                          maxBytes: 1000, allowFileURLs: false)
                let (outcome, _) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
                #expect(outcome.details?["status"] == "200")
                #expect(FileManager.default.contents(atPath: directory.file("output")) == body)
            }
        }

        /// file:// is refused unless allowed, and then reads the file.
        @Test func fileURLsNeedPermission() async throws {
            let source = try TemporaryDirectory("fetchd-hdl")
            let contents = Data("local content".utf8)
            try contents.write(to: URL(fileURLWithPath: source.file("local.txt")))
            let url = "file://" + source.file("local.txt")

            let refusedDirectory = try TemporaryDirectory("fetchd-hdl")
            let refused = await FetchRunner().run(
                HTTPHandler(url: url, maxBytes: 1024, allowFileURLs: false),
                context: makeContext(in: refusedDirectory, deadline: Self.deadline))
            let reason = try #require(refused.failureReason)
            #expect(reason.lowercased().contains("scheme") || reason.lowercased().contains("protocol"), "\(reason)")

            let allowedDirectory = try TemporaryDirectory("fetchd-hdl")
            let allowed = await FetchRunner().run(
                HTTPHandler(url: url, maxBytes: 1024, allowFileURLs: true),
                context: makeContext(in: allowedDirectory, deadline: Self.deadline))
            guard case .newData? = allowed.completion else {
                Issue.record("expected newData, got \(String(describing: allowed.completion))")
                return
            }
            #expect(FileManager.default.contents(atPath: allowedDirectory.file("output")) == contents)
        }

        /// Connection refused on a closed port is `failed` as a connect error.
        @Test func connectionRefusedFails() async throws {
            let port = try TestHTTPServer.freePort()
            let directory = try TemporaryDirectory("fetchd-hdl")
            let handler = HTTPHandler(url: "http://127.0.0.1:\(port)/", maxBytes: 1024, allowFileURLs: false)
            let (outcome, elapsed) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
            let reason = try #require(outcome.failureReason)
            #expect(reason.contains("connect"))
            expectElapsed(elapsed, in: .zero ... Self.bound)
        }

        /// A server that accepts but never answers cannot hold the fetch past its deadline.
        @Test func stalledServerIsBoundedByTheDeadline() async throws {
            let server = try TestHTTPServer.stalled()
            defer { server.stop() }
            let directory = try TemporaryDirectory("fetchd-hdl")
            let deadline: Duration = .milliseconds(1500)
            var handler = HTTPHandler(url: "http://127.0.0.1:\(server.port)/slow", maxBytes: 1024, allowFileURLs: false)
            // libcurl's own limit 20 s past the deadline (as in HostileServerTests): only the
            // context's expiration can end the transfer near the deadline, so the result is
            // `expired`, and a generous bound still tells the two apart on a loaded machine.
            handler.backstopMilliseconds = 20_000
            let (outcome, elapsed) = await timedRun(handler, context: makeContext(in: directory, deadline: deadline))
            #expect(outcome.expired, "expected expired, got \(String(describing: outcome.completion))")
            #expect(outcome.completion == nil)
            expectElapsed(elapsed, in: deadline - .milliseconds(100) ... deadline + .seconds(10))
        }

        /// Cancelling the run from outside stops a stalled transfer promptly.
        @Test func outsideCancellationStopsAStalledTransfer() async throws {
            let server = try TestHTTPServer.stalled()
            defer { server.stop() }
            let directory = try TemporaryDirectory("fetchd-hdl")
            let handler = HTTPHandler(url: "http://127.0.0.1:\(server.port)/slow", maxBytes: 1024, allowFileURLs: false)
            // A deadline far beyond the bound: a cancellation that does not work shows as a run
            // to the deadline (60 s), not as a slow cancellation.
            let context = makeContext(in: directory, deadline: .seconds(60))
            let clock = ContinuousClock()
            let start = clock.now
            let outcome = await runCancelled(handler, context: context, after: .milliseconds(300))
            let result = try #require(outcome)
            #expect(result.interrupted)
            #expect(result.completion == nil)
            // libcurl checks the cancel flag from its progress callback, about once a second when
            // idle; the bound is generous for a loaded machine.
            expectElapsed(clock.now - start, in: .milliseconds(300) ... .seconds(20))
        }
    }
}
