import FetchdConfig
import FetchdControl
import FetchdCore
@testable import FetchdDaemon
import FetchdPush
import FetchdState
import FetchdTestSupport
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Testing

/// The push listener wired to the daemon, in process, on a free loopback port, with the
/// wake clock running: an authorised push reaches its handler's fetch with its data, and the
/// limit coalesces the next. (The listener's own checks and limits: FetchdPushTests.)
@Suite(.serialized)
struct PushListenerTests {
    static let feedToken = "f753bcac1bfe878445634dc63efa5fc4"
    static let otherToken = "S0L7LbO9iHnXg9+AfkZATg=="

    /// Runs a listener (1 s read timeout) and a wake clock over `feed` (token, `1/minute`),
    /// `other` (token) and `quiet` (no token), and calls `body` with its port.
    private func withListener(limits configure: (inout PushListener.Limits) -> Void = { _ in },
                              _ body: (Int, FetchCoordinator) async throws -> Void) async throws {
        let directory = try TemporaryDirectory("push-listener")
        defer { directory.remove() }
        var tokenFiles: [String] = []
        for (name, token) in [("feed", Self.feedToken), ("other", Self.otherToken)] {
            let path = try directory.write(token + "\n", to: "\(name).token")
            #expect(chmod(path, 0o600) == 0)
            tokenFiles.append(path)
        }
        func handler(_ name: String, _ extra: String) -> String {
            """
            [[handler]]
            name = "\(name)"
            kind = "exec"
            command = ["/bin/sh", "-c", "printf '%s' \\"${FETCHD_PUSH_DATA:-none}\\" > \\"$FETCHD_OUTPUT\\""]
            min_interval = "never"
            \(extra)
            """
        }
        let coordinator = try TestConfig.coordinator(in: directory, handlers: [
            handler("feed", "push_limit = \"1/minute\"\npush_token_file = \"\(tokenFiles[0])\""),
            handler("other", "push_token_file = \"\(tokenFiles[1])\""),
            handler("quiet", ""),
        ].joined(separator: "\n\n"))
        let logger = Logger(label: "push-listener-test")
        let clock = WakeClock(coordinator: coordinator, logger: logger)
        var limits = PushListener.Limits()
        limits.readTimeoutSeconds = 1
        configure(&limits)
        let listener = PushListener(address: ListenAddress(host: "127.0.0.1", port: 0),
                                    sink: PushIntake(queue: coordinator, clock: clock), logger: logger,
                                    limits: limits)
        let group = ServiceGroup(configuration: .init(services: [.init(service: listener), .init(service: clock)],
                                                      logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var address: String?
            for _ in 0..<400 where address == nil {
                address = await coordinator.instance.pushListenerAddress
                if address == nil { try await Task.sleep(for: .milliseconds(25)) }
            }
            let port = try #require(address.flatMap { $0.split(separator: ":").last.flatMap { Int($0) } })
            #expect(port > 0)
            do {
                try await body(port, coordinator)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    private func push(_ port: Int, _ name: String, token: String?, body: String = "") async -> RawHTTPClient.Reply {
        let headers = token.map { ["Authorization: Bearer \($0)"] } ?? []
        return await RawHTTPClient.exchange(port: port, RawHTTPClient.post("/push/\(name)", headers: headers, body: body))
    }

    @Test func tokensAreCheckedPerHandler() async throws {
        try await withListener { port, coordinator in
            let missing = await push(port, "feed", token: nil, body: "{}")
            #expect(missing.status == 401 && missing.body.contains("missing or wrong token") && missing.closed, "\(missing)")
            #expect(missing.headers.contains("WWW-Authenticate: Bearer"), "\(missing.headers)")
            let wrong = await push(port, "feed", token: Self.feedToken + "x", body: "{}")
            #expect(wrong.status == 401, "\(wrong)")
            let another = await push(port, "feed", token: Self.otherToken, body: "{}")
            #expect(another.status == 401, "another handler's token opens only that handler: \(another)")
            let basic = await RawHTTPClient.exchange(port: port, RawHTTPClient.post(
                "/push/feed", headers: ["Authorization: Basic \(Self.feedToken)"], body: "{}"))
            #expect(basic.status == 401, "\(basic)")
            #expect(try coordinator.state.history(of: "feed", limit: 5).isEmpty, "no refused push ran")

            let right = await push(port, "feed", token: Self.feedToken, body: #"{"id":42}"#)
            #expect(right.status == 202 && right.body.contains(#""deferred":false"#) && !right.closed, "\(right)")
            let state = coordinator.state
            #expect(await waitUntil(timeoutSeconds: 15) { (try? state.history(of: "feed", limit: 1).first?.trigger) == .push })
            let latest = coordinator.snapshots.latestContentPath(of: "feed")
            let content = try String(contentsOfFile: latest, encoding: .utf8)
            #expect(content == #"{"id":42}"#, "the body reached the handler as FETCHD_PUSH_DATA")

            // Over push_limit (1/minute): 202 all the same, coalesced, with the time in the body.
            let coalesced = await push(port, "feed", token: Self.feedToken, body: #"{"id":43}"#)
            #expect(coalesced.status == 202, "\(coalesced)")
            #expect(coalesced.body.contains("rate limited: coalesced into one fetch at ") && coalesced.body.contains(#""fetch_at":"#),
                    "\(coalesced.body)")
        }
    }
}
