import FetchdControl
import FetchdCore
import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// Push wakes end to end: the real daemon driven by `fetchctl push` and by HTTP, with short
/// push limits instead of long waits, and a heartbeat of an hour so that a deferred push runs
/// only because the scheduler woke for it.
@Suite(.serialized)
struct PushEndToEndTests {
    private static func handlers(limit: String, extra: String = "") -> String {
        """
        [[handler]]
        name = "feed"
        kind = "exec"
        command = ["/bin/sh", "-c", "printf '%s' \\"${FETCHD_PUSH_DATA:-none}\\" > \\"$FETCHD_OUTPUT\\""]
        min_interval = "never"
        push_limit = "\(limit)"
        \(extra)
        """
    }

    private func pushFetches(_ state: StateStore) -> [CompletedFetch] {
        ((try? state.history(of: "feed", limit: 20)) ?? []).filter { $0.trigger == .push }
    }

    private func content(_ daemon: DaemonProcess) -> String? {
        try? String(contentsOfFile: daemon.cachePath + "/feed/latest/content", encoding: .utf8)
    }

    @Test func fetchctlPushFetchesWithTheDataAndCoalescesOverTheLimit() async throws {
        let daemon = try DaemonProcess(handlers: Self.handlers(limit: "1/10s"), heartbeat: "1h")
        try await daemon.start()
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        let first = try await daemon.fetchctlWithoutBlocking(["push", "feed", "--data", #"{"id": 1}"#])
        #expect(first.status == 0 && first.output == "feed: push accepted: fetching now\n", "\(first.output)")
        #expect(await waitUntil(timeoutSeconds: 15) { pushFetches(state).count == 1 })
        #expect(content(daemon) == #"{"id": 1}"#, "FETCHD_PUSH_DATA reaches the exec handler")

        // Two more within 10 s (room for a loaded machine to start fetchctl twice): one deferred
        // fetch, the newest data, shown by status.
        let second = try await daemon.fetchctlWithoutBlocking(["push", "feed", "--data", #"{"id": 2}"#])
        let third = try await daemon.fetchctlWithoutBlocking(["push", "feed", "--data", #"{"id": 3}"#, "--json"])
        #expect(second.output.contains("feed: rate limited: coalesced into one fetch at "), "\(second.output)")
        #expect(second.output.range(of: #"at \d\d:\d\d:\d\d "#, options: .regularExpression) != nil, "\(second.output)")
        let report = try ControlProtocol.decoder().decode(PushReport.self, from: Data(third.output.utf8))
        #expect(report.deferred && report.coalescedPushes == 2 && report.limit == "1/10s")
        let status = try await daemon.fetchctlWithoutBlocking(["status"])
        // "in 8s", or "now" when this machine was slow enough for the 10 s to pass already.
        #expect(status.output.contains("pushes held by push_limit (coalesced into one fetch each):\n  feed: one fetch in ")
                    || status.output.contains("pushes held by push_limit (coalesced into one fetch each):\n  feed: one fetch now"),
                "\(status.output)")
        #expect(await waitUntil(timeoutSeconds: 30) { pushFetches(state).count == 2 },
                "the deferred push must run at its time, with a heartbeat of an hour")
        #expect(content(daemon) == #"{"id": 3}"#, "the newest data wins")
        // Cleared just after its fetch is recorded (the history can be seen first).
        #expect(await waitUntil(timeoutSeconds: 10) { (try? state.pushes.pending().isEmpty) ?? false })

        // Refusals: not JSON, too large, no such handler.
        let malformed = try await daemon.fetchctlWithoutBlocking(["push", "feed", "--data", "{id: 4}"])
        #expect(malformed.status == 1 && malformed.output.contains("the push data is not valid JSON"), "\(malformed.output)")
        let large = try await daemon.fetchctlWithoutBlocking(["push", "feed", "--data", "\"" + String(repeating: "x", count: 5000) + "\""])
        #expect(large.status == 1 && large.output.contains("over the limit of \(Defaults.pushDataMaxBytes) bytes"), "\(large.output)")
        let unknown = try await daemon.fetchctlWithoutBlocking(["push", "nope"])
        #expect(unknown.status == 1 && unknown.output.contains("no handler named \"nope\""), "\(unknown.output)")
        #expect(pushFetches(state).count == 2)
        daemon.stopAndReadLog()
    }

    @Test func aDeferredPushSurvivesARestart() async throws {
        let daemon = try DaemonProcess(handlers: Self.handlers(limit: "1/4s"), heartbeat: "1h")
        try await daemon.start()
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        _ = try await daemon.fetchctlWithoutBlocking(["push", "feed", "--data", "\"first\""])
        let deferred = try await daemon.fetchctlWithoutBlocking(["push", "feed", "--data", "\"after the restart\""])
        #expect(deferred.output.contains("rate limited"), "\(deferred.output)")
        #expect(await waitUntil(timeoutSeconds: 15) { pushFetches(state).count == 1 })
        let stopped = try await daemon.restart()
        #expect(stopped.status == 0, "\(stopped.log)")
        #expect(pushFetches(state).count == 1, "the deferred push waits for its time")
        #expect(try state.pushes.pending().map(\.data) == ["\"after the restart\""])
        #expect(await waitUntil(timeoutSeconds: 20) { pushFetches(state).count == 2 })
        #expect(content(daemon) == "\"after the restart\"")
        daemon.stopAndReadLog()
    }

    /// "push accepted: fetching now" is a promise: a daemon SIGKILLed while that fetch runs (here
    /// the program sleeps the first time) runs it again, with its data, once it starts again.
    @Test func anAcceptedPushSurvivesASIGKILLBeforeItsFetchIsRecorded() async throws {
        let directory = try TemporaryDirectory("push-kill-mark")
        defer { directory.remove() }
        let mark = directory.file("started")
        let daemon = try DaemonProcess(handlers: """
            [[handler]]
            name = "feed"
            kind = "exec"
            command = ["/bin/sh", "-c", "if [ -e \\"$MARK\\" ]; then printf '%s' \\"$FETCHD_PUSH_DATA\\" > \\"$FETCHD_OUTPUT\\"; else touch \\"$MARK\\"; exec sleep 20; fi"]
            environment = { MARK = "\(mark)" }
            min_interval = "never"
            """, heartbeat: "1h")
        try await daemon.start()
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        let accepted = try await daemon.fetchctlWithoutBlocking(["push", "feed", "--data", "\"kept\""])
        #expect(accepted.output == "feed: push accepted: fetching now\n", "\(accepted.output)")
        #expect(await waitUntil(timeoutSeconds: 15) { FileManager.default.fileExists(atPath: mark) })
        try await daemon.killAndRestart()
        #expect(await waitUntil(timeoutSeconds: 20) { pushFetches(state).contains { $0.result == .newData } },
                "\(pushFetches(state).map(\.result.summary))")
        #expect(content(daemon) == "\"kept\"")
        #expect(await waitUntil(timeoutSeconds: 10) { (try? state.pushes.pending().isEmpty) ?? false })
        daemon.stopAndReadLog()
    }

    @Test func theListenerTakesAPushWithTheRightToken() async throws {
        let token = "279343f2ac8aea7d21000d347980970a"  // openssl rand -hex 16: 128 bits
        let directory = try TemporaryDirectory("push-token")
        defer { directory.remove() }
        let tokenFile = try directory.write(token, to: "feed.token")
        #expect(chmod(tokenFile, 0o600) == 0)
        let daemon = try DaemonProcess(handlers: Self.handlers(limit: "6/hour", extra: "push_token_file = \"\(tokenFile)\""),
                                       extraMain: "push_listen = \"127.0.0.1:0\"")
        try await daemon.start()
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        let status = try ControlProtocol.decoder().decode(StatusReport.self, from: Data(try await daemon.fetchctlWithoutBlocking(["status", "--json"]).output.utf8))
        let listener = try #require(status.pushListener)
        let port = try #require(listener.split(separator: ":").last.flatMap { Int($0) })
        #expect(listener.hasPrefix("127.0.0.1:") && port > 0)
        let refused = await RawHTTPClient.exchange(port: port, RawHTTPClient.post("/push/feed", body: "[7]"))
        #expect(refused.status == 401, "\(refused)")
        let accepted = await RawHTTPClient.exchange(port: port, RawHTTPClient.post(
            "/push/feed", headers: ["Authorization: Bearer \(token)"], body: "[7]"))
        #expect(accepted.status == 202, "\(accepted)")
        #expect(await waitUntil(timeoutSeconds: 15) { pushFetches(state).count == 1 })
        #expect(content(daemon) == "[7]")
        let log = daemon.stopAndReadLog()
        #expect(log.status == 0 && log.log.contains("push listener on http://127.0.0.1:\(port)/push/NAME"), "\(log.log)")
    }

    /// The real daemon's listener on 127.0.0.1 locks a local guesser out (loopback is not exempt,
    /// and 127.0.0.3 is the same source as 127.0.0.1), while the `push_trusted_proxy` address,
    /// 127.0.0.2 here, is never locked out for its clients' wrong tokens.
    @Test func aLocalGuesserIsLockedOutButNotTheTrustedProxy() async throws {
        let token = "e7cec8b779e6f764eac800ab4aa53d6c"
        let directory = try TemporaryDirectory("push-trusted-proxy")
        defer { directory.remove() }
        let tokenFile = try directory.write(token + "\n", to: "feed.token")
        #expect(chmod(tokenFile, 0o600) == 0)
        let daemon = try DaemonProcess(handlers: Self.handlers(limit: "6/hour", extra: "push_token_file = \"\(tokenFile)\""),
                                       extraMain: "push_listen = \"127.0.0.1:0\"\npush_trusted_proxy = \"127.0.0.2\"")
        try await daemon.start()
        let status = try ControlProtocol.decoder().decode(StatusReport.self, from: Data(try await daemon.fetchctlWithoutBlocking(["status", "--json"]).output.utf8))
        let port = try #require(status.pushListener?.split(separator: ":").last.flatMap { Int($0) })
        func push(_ bearer: String, from source: String) async -> RawHTTPClient.Reply {
            await RawHTTPClient.exchange(port: port, RawHTTPClient.post("/push/feed", headers: ["Authorization: Bearer \(bearer)"],
                                                                        body: "{}"), from: source)
        }
        let guess = "3717e3e732aceb6fc898c493a0917155"
        for attempt in 0..<(Defaults.pushFailedTokensPerWindow + 2) {
            let refused = await push(guess, from: "127.0.0.2")
            #expect(refused.status == 401, "the proxy's guess \(attempt): \(refused)")
        }
        #expect(await push(token, from: "127.0.0.2").status == 202, "the proxy is never locked out")
        for attempt in 0..<Defaults.pushFailedTokensPerWindow {
            let refused = await push(guess, from: attempt.isMultiple(of: 2) ? "127.0.0.1" : "127.0.0.3")
            #expect(refused.status == 401, "local guess \(attempt): \(refused)")
        }
        let locked = await push(token, from: "127.0.0.1")
        #expect(locked.status == 429 && locked.headers.contains("Retry-After: "), "\(locked)")
        #expect(await push(token, from: "127.0.0.2").status == 202, "the proxy still gets through")
        let log = daemon.stopAndReadLog()
        #expect(log.status == 0, "\(log.log)")
    }
}
