import FetchdConfig
import FetchdControl
import FetchdCore
@testable import FetchdPush
import FetchdTestSupport
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// The push listener alone, on a free loopback port, over a fake daemon (`FakePushSink`): token
/// checks, size and time limits, per-source limits and clear status codes, driven by a raw HTTP
/// client.
@Suite(.serialized)
struct PushListenerLimitsTests {
    static let feedToken = "e7cec8b779e6f764eac800ab4aa53d6c"
    /// A guess: not `feed`'s token.
    static let wrongToken = "3717e3e732aceb6fc898c493a0917155"

    /// Runs a listener (1 s read timeout) whose sink knows `feed` (with a token) and `quiet`
    /// (without), and calls `body` with its port.
    private func withListener(limits configure: (inout PushListener.Limits) -> Void = { _ in },
                              _ body: (Int, FakePushSink) async throws -> Void) async throws {
        let sink = FakePushSink(tokens: ["feed": Self.feedToken])
        let logger = Logger(label: "push-listener-test")
        var limits = PushListener.Limits()
        limits.readTimeoutSeconds = 1
        configure(&limits)
        let listener = PushListener(address: ListenAddress(host: "127.0.0.1", port: 0), sink: sink, logger: logger,
                                    limits: limits)
        let group = ServiceGroup(configuration: .init(services: [.init(service: listener)], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(await eventually(timeoutSeconds: 10) { sink.address != nil }, "the listener did not start")
            let port = try #require(sink.address.flatMap { $0.split(separator: ":").last.flatMap { Int($0) } })
            do {
                try await body(port, sink)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(sink.address == nil, "a stopped listener says so")
    }

    /// A push from `source` (a loopback address; nil: 127.0.0.1).
    private func push(_ port: Int, _ name: String, token: String?, body: String = "", from source: String? = nil) async -> RawHTTPClient.Reply {
        let headers = token.map { ["Authorization: Bearer \($0)"] } ?? []
        return await RawHTTPClient.exchange(port: port, RawHTTPClient.post("/push/\(name)", headers: headers, body: body), from: source)
    }

    @Test func anAuthorisedPushReachesTheSinkWithItsData() async throws {
        try await withListener { port, sink in
            let wrong = await push(port, "feed", token: Self.feedToken + "x", body: #"{"id":1}"#)
            #expect(wrong.status == 401, "\(wrong)")
            let right = await push(port, "feed", token: Self.feedToken, body: #"{"id":42}"#)
            #expect(right.status == 202 && !right.closed, "\(right)")
            // RFC 9110: an origin server with a clock sends Date in every 2xx and 4xx.
            for reply in [wrong, right] {
                let date = reply.headers.split(separator: "\r\n").first { $0.hasPrefix("Date: ") }.map { String($0.dropFirst(6)) }
                #expect(date.flatMap { HTTPDate.parse($0) }.map { abs($0.timeIntervalSinceNow) < 60 } == true, "\(reply.headers)")
            }
            #expect(sink.pushes.map(\.handler) == ["feed"] && sink.pushes.first?.data == #"{"id":42}"#)
        }
    }

    @Test func unknownHandlersWrongMethodsAndBadBodiesGetClearErrors() async throws {
        try await withListener { port, sink in
            // No such handler, or one that takes no pushes: the very answer a wrong token gets, so
            // a client without a token cannot tell which handlers take pushes.
            let wrong = await push(port, "feed", token: Self.feedToken + "x")
            let unknown = await push(port, "nope", token: Self.feedToken)
            let noToken = await push(port, "quiet", token: Self.feedToken)
            for reply in [unknown, noToken] {
                #expect(reply.status == 401 && reply.body == wrong.body && reply.closed, "\(reply) vs \(wrong)")
            }
            let elsewhere = await RawHTTPClient.exchange(port: port, RawHTTPClient.post("/other/feed"))
            #expect(elsewhere.status == 404, "\(elsewhere)")
            let get = await RawHTTPClient.exchange(port: port, Array("GET /push/feed HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            #expect(get.status == 405 && get.headers.contains("Allow: POST"), "\(get)")

            let malformed = await push(port, "feed", token: Self.feedToken, body: "{id: 42}")
            #expect(malformed.status == 400 && malformed.body.contains("not valid JSON") && malformed.closed, "\(malformed)")
            let oversize = String(repeating: "x", count: Defaults.pushDataMaxBytes + 1)
            let large = await push(port, "feed", token: Self.feedToken, body: "\"\(oversize)\"")
            #expect(large.status == 413 && large.body.contains("over \(Defaults.pushDataMaxBytes) bytes") && large.closed, "\(large)")
            // Without a Content-Length (chunked), the body is cut off at the limit all the same.
            let chunk = String(repeating: "y", count: Defaults.pushDataMaxBytes + 10)
            let chunked = await RawHTTPClient.exchange(port: port, Array(("POST /push/feed HTTP/1.1\r\nHost: x\r\n"
                + "Authorization: Bearer \(Self.feedToken)\r\nTransfer-Encoding: chunked\r\n\r\n"
                + String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n0\r\n\r\n").utf8))
            #expect(chunked.status == 413, "\(chunked)")
            let headers = await RawHTTPClient.exchange(port: port, RawHTTPClient.post(
                "/push/feed", headers: ["X-Padding: " + String(repeating: "p", count: Defaults.pushHeaderMaxBytes)]))
            #expect(headers.status == 431 && headers.closed, "\(headers)")
            #expect(sink.pushes.isEmpty, "no refused push reached the daemon")
        }
    }

    /// The read timeout is 1 s here; the client waits 20 s, so a 408 can only come from the server.
    @Test func aClientThatDoesNotFinishItsRequestIsTimedOut() async throws {
        try await withListener { port, _ in
            let partial = Array("POST /push/feed HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n".utf8)
            let slowHeaders = await RawHTTPClient.exchange(port: port, partial)
            #expect(slowHeaders.status == 408 && slowHeaders.closed, "\(slowHeaders)")
            #expect(slowHeaders.headers.contains("Date: "), "the connection guard's answers carry a Date too")
            let whole = RawHTTPClient.post("/push/feed", headers: ["Authorization: Bearer \(Self.feedToken)"], body: "{}")
            let slowBody = await RawHTTPClient.exchange(port: port, Array(whole.dropLast(1)))
            #expect(slowBody.status == 408 && slowBody.closed, "\(slowBody)")
        }
    }

    @Test func refusalsAreLoggedOncePerInterval() {
        let log = RefusalLog()
        let start = ContinuousClock.now
        #expect(log.shouldLog(intervalSeconds: 10, now: start) == 0)
        #expect(log.shouldLog(intervalSeconds: 10, now: start + .seconds(1)) == nil)
        #expect(log.shouldLog(intervalSeconds: 10, now: start + .seconds(2)) == nil)
        #expect(log.shouldLog(intervalSeconds: 10, now: start + .seconds(11)) == 2, "the next line counts what was not logged")
        #expect(log.shouldLog(intervalSeconds: 10, now: start + .seconds(12)) == nil)
    }

    /// One source may hold only its share of the connections: the next is closed unanswered, and
    /// a closed one gives its place back.
    @Test func oneSourceCannotHoldMoreThanItsShareOfConnections() async throws {
        try await withListener(limits: { $0.maxConnectionsPerSource = 3; $0.readTimeoutSeconds = 30 }) { port, _ in
            var idle = try (0..<3).map { _ in try Self.connect(port) }
            defer { idle.forEach { close($0) } }
            // Connections are set up on several event loops, not in the order they were made: give
            // the idle ones time to be counted, and check that none was refused.
            try await Task.sleep(for: .seconds(1))
            for fd in idle {
                var byte: UInt8 = 0
                #expect(recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) < 0 && errno == EAGAIN, "an idle connection was closed")
            }
            let refused = await push(port, "feed", token: Self.feedToken, body: "{}")
            #expect(refused.status == nil && refused.closed, "\(refused)")
            close(idle.removeLast())
            var status: Int?
            #expect(await eventually(timeoutSeconds: 10, pollMilliseconds: 100) {
                status = await push(port, "feed", token: Self.feedToken, body: "{}").status
                return status == 202
            }, "\(String(describing: status))")
        }
    }

    /// After `failedTokensPerWindow` wrong tokens a source is answered 429 until the window ends,
    /// even with the right token. Loopback, the only source a test has, is locked out like any
    /// other: any local user can reach a listener on 127.0.0.1.
    @Test func wrongTokensAreRateLimitedPerSource() async throws {
        try await withListener(limits: { $0.failedTokensPerWindow = 3 }) { port, sink in
            for _ in 0..<3 {
                #expect(await push(port, "feed", token: Self.wrongToken).status == 401)
            }
            let limited = await push(port, "feed", token: Self.feedToken, body: "{}")
            #expect(limited.status == 429 && limited.closed && limited.body.contains("too many pushes with a wrong token from loopback"),
                    "\(limited)")
            let retry = limited.headers.split(separator: "\r\n").first { $0.hasPrefix("Retry-After: ") }
                .flatMap { Int($0.dropFirst("Retry-After: ".count)) }
            #expect(retry.map { (1...61).contains($0) } == true, "\(limited.headers)")
            #expect(sink.pushes.isEmpty, "no push reached the daemon")
        }
    }

    /// All of 127.0.0.0/8 is one source: a local user guessing from 127.0.0.2, .3 and .4 gets
    /// no more guesses than from one address, and locks out 127.0.0.1 with them.
    @Test func everyLoopbackAddressCountsAsOneSource() async throws {
        try await withListener(limits: { $0.failedTokensPerWindow = 3 }) { port, sink in
            for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
                let guess = await push(port, "feed", token: Self.wrongToken, from: source)
                #expect(guess.status == 401, "\(source): \(guess)")
            }
            for source in ["127.0.0.1", "127.0.0.5"] {
                let limited = await push(port, "feed", token: Self.feedToken, body: "{}", from: source)
                #expect(limited.status == 429, "\(source): \(limited)")
            }
            #expect(sink.pushes.isEmpty, "no push reached the daemon")
        }
    }

    /// Only the configured proxy's own address is never locked out (its clients all share it);
    /// its wrong tokens do not count against the rest of loopback, which is locked out as any
    /// source is.
    @Test func onlyTheTrustedProxyIsNeverLockedOut() async throws {
        try await withListener(limits: { $0.failedTokensPerWindow = 2; $0.trustedProxy = "127.0.0.2" }) { port, sink in
            for _ in 0..<4 {
                #expect(await push(port, "feed", token: Self.wrongToken, from: "127.0.0.2").status == 401)
            }
            let proxied = await push(port, "feed", token: Self.feedToken, body: "{}", from: "127.0.0.2")
            #expect(proxied.status == 202, "the trusted proxy is never locked out: \(proxied)")
            for _ in 0..<2 {
                #expect(await push(port, "feed", token: Self.wrongToken, from: "127.0.0.3").status == 401)
            }
            let local = await push(port, "feed", token: Self.feedToken, body: "{}", from: "127.0.0.1")
            #expect(local.status == 429, "another local address is locked out: \(local)")
            let stillProxied = await push(port, "feed", token: Self.feedToken, body: "{}", from: "127.0.0.2")
            #expect(stillProxied.status == 202, "\(stillProxied)")
            #expect(sink.pushes.count == 2)
        }
    }

    /// A connected TCP socket to the listener that sends nothing.
    private static func connect(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        return fd
    }
}

/// The daemon's side of the listener, faked: fixed tokens, pushes recorded, the data checked as
/// the daemon checks it.
final class FakePushSink: PushSink {
    private struct State {
        var pushes: [(handler: String, data: String)] = []
        var address: String?
    }
    private let tokens: [String: String]
    private let state = Mutex(State())

    /// A sink that knows `tokens`, by handler name.
    init(tokens: [String: String]) { self.tokens = tokens }

    /// The pushes taken, in order.
    var pushes: [(handler: String, data: String)] { state.withLock { $0.pushes } }
    /// Where the listener said it listens.
    var address: String? { state.withLock { $0.address } }

    /// The token given for `handler`, if any.
    func pushToken(of handler: String) async -> String? { tokens[handler] }

    /// Checks the data as the daemon does, records the push and says it fetches now.
    func push(_ handler: String, data: [UInt8]) async throws(PushRefusal) -> PushReport {
        let text: String?
        do { text = try PushData.validate(data) } catch { throw .badData(error) }
        state.withLock { $0.pushes.append((handler, text ?? "")) }
        return PushReport.now(handler: handler, limit: "none")
    }

    /// Keeps `address` for `address`.
    func listenerAddressChanged(_ address: String?) async { state.withLock { $0.address = address } }
}
