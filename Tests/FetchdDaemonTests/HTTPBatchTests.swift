import FetchdCore
import FetchdDaemon
import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// A wake's http fetches run as one batch (no task per fetch): the contract of a task per fetch
/// holds there too. Each fetch expires at its own deadline, a fetch asked for meanwhile joins
/// the batch's, a shutdown records every fetch, and nothing stays staged. Against the hostile
/// test server (`/stall`: headers and 10 bytes, then silence for a minute).
@Suite(.serialized)
struct HTTPBatchTests {
    private func handler(_ name: String, url: String, deadline: String? = nil) -> String {
        """
        [[handler]]
        name = "\(name)"
        kind = "http"
        url = "\(url)"
        \(deadline.map { "deadline = \"\($0)\"" } ?? "")

        """
    }

    @Test func eachFetchOfABatchExpiresAtItsOwnDeadline() async throws {
        let server = try TestHTTPServer.hostile()
        let directory = try TemporaryDirectory("http-batch")
        defer { directory.remove() }
        let base = "http://127.0.0.1:\(server.port)"
        let coordinator = try TestConfig.coordinator(
            in: directory, main: "",
            handlers: handler("one", url: "\(base)/stall", deadline: "1s") + handler("two", url: "\(base)/stall", deadline: "2s")
                + handler("quick", url: "\(base)/redirect/0"))
        let records = await coordinator.runDue(trigger: .manual)
        let byName = Dictionary(uniqueKeysWithValues: records.map { ($0.handler, $0) })
        let one = try #require(byName["one"]), two = try #require(byName["two"]), quick = try #require(byName["quick"])
        #expect(quick.result == .newData)
        #expect(one.result == .expired && two.result == .expired, "\(records)")
        // At the deadline, not at libcurl's stall limit (30 s) nor at the other fetch's deadline; the
        // second transfer to a busy host too (libcurl's own limit would end it about 200 ms late).
        #expect((1000..<1150).contains(one.durationMilliseconds), "\(one.durationMilliseconds) ms")
        #expect((2000..<2150).contains(two.durationMilliseconds), "\(two.durationMilliseconds) ms")
        // Recorded as they ended, and nothing of the expired ones left staged.
        #expect(try coordinator.state.history(of: "one").map(\.result) == [.expired])
        let staged = try FileManager.default.contentsOfDirectory(atPath: directory.file("cache/.staging"))
        #expect(staged.isEmpty, "\(staged)")
        #expect(coordinator.snapshots.publishedContentPath(of: "one") == nil)
        #expect(try String(contentsOfFile: try #require(coordinator.snapshots.publishedContentPath(of: "quick")),
                           encoding: .utf8) == "done")
    }

    @Test func aFetchAskedForDuringABatchJoinsIt() async throws {
        let server = try TestHTTPServer.hostile()
        let directory = try TemporaryDirectory("http-batch")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(
            in: directory, main: "", handlers: handler("stalled", url: "http://127.0.0.1:\(server.port)/stall", deadline: "2s"))
        async let wake = coordinator.runDue(trigger: .manual)
        try await Task.sleep(for: .milliseconds(500))
        let asked = try #require(await coordinator.fetchJoining("stalled", trigger: .manual))
        #expect(asked.joined && asked.record.result == .expired)
        #expect(await wake.map(\.result) == [.expired])
        #expect(try coordinator.state.history(of: "stalled").count == 1)
    }

    @Test func aShutdownRecordsEveryFetchOfABatch() async throws {
        let server = try TestHTTPServer.hostile()
        let directory = try TemporaryDirectory("http-batch")
        defer { directory.remove() }
        // One slot: the first fetch runs, the other two wait for it.
        let coordinator = try TestConfig.coordinator(
            in: directory, main: "http_max_transfers = 1",
            handlers: (1...3).map { handler("h\($0)", url: "http://127.0.0.1:\(server.port)/stall", deadline: "30s") }.joined())
        let wake = Task { await coordinator.runDue(trigger: .manual) }
        try await Task.sleep(for: .milliseconds(500))
        let stoppedAt = ContinuousClock.now
        wake.cancel()
        let records = await wake.value
        #expect(ContinuousClock.now - stoppedAt < .seconds(5))
        let reasons = records.sorted { $0.handler < $1.handler }.map { $0.result.reason ?? "" }
        #expect(reasons == ["stopped: fetchd is shutting down",
                            "stopped before it started: fetchd is shutting down",
                            "stopped before it started: fetchd is shutting down"], "\(records)")
        for name in ["h1", "h2", "h3"] { #expect(try coordinator.state.history(of: name).count == 1) }
    }

    /// Only http handlers join the batch: a transfer in the same wake still downloads as a
    /// transfer (its slots, its resumable file), a program still runs.
    @Test func transfersAndProgramsInAWakeKeepTheirOwnPath() async throws {
        let server = try TestHTTPServer.hostile()
        let directory = try TemporaryDirectory("http-batch")
        defer { directory.remove() }
        let url = "http://127.0.0.1:\(server.port)/redirect/0"
        let coordinator = try TestConfig.coordinator(in: directory, main: "", handlers: handler("page", url: url) + """
            [[handler]]
            name = "download"
            kind = "transfer"
            url = "\(url)"

            [[handler]]
            name = "program"
            kind = "exec"
            command = ["/bin/sh", "-c", "echo ran > \\"$FETCHD_OUTPUT\\""]

            """)
        let records = await coordinator.runDue(trigger: .manual)
        #expect(records.count == 3 && records.allSatisfy { $0.result == .newData }, "\(records)")
        for name in ["page", "download"] {
            let path = try #require(coordinator.snapshots.publishedContentPath(of: name))
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "done")
        }
    }

    /// A fetch asked for during a wake runs at once, as itself, when the batch has not started
    /// its handler (waiting for a slot, or not yet fed to the slots): it does not wait for its
    /// turn among thousands. One the batch has started is joined.
    @Test func aFetchAskedForTakesOverAHandlerTheBatchHasNotStarted() async throws {
        let server = try TestHTTPServer.hostile()
        let directory = try TemporaryDirectory("http-batch")
        defer { directory.remove() }
        let base = "http://127.0.0.1:\(server.port)"
        // One slot, a window of four: "stalled" runs, q1 to q3 wait for the slot, q4 and q5 are not fed.
        let coordinator = try TestConfig.coordinator(
            in: directory, main: "http_max_transfers = 1",
            handlers: handler("stalled", url: "\(base)/stall", deadline: "2s")
                + (1...5).map { handler("q\($0)", url: "\(base)/redirect/0") }.joined())
        async let wake = coordinator.runDue(trigger: .manual)
        try await Task.sleep(for: .milliseconds(500))
        async let waiting = coordinator.fetchJoining("q1", trigger: .push)
        async let notFed = coordinator.fetchJoining("q5", trigger: .push)
        async let running = coordinator.fetchJoining("stalled", trigger: .manual)
        for asked in [try #require(await waiting), try #require(await notFed)] {
            #expect(!asked.joined && asked.record.trigger == .push && asked.record.result == .newData, "\(asked)")
        }
        let joined = try #require(await running)
        #expect(joined.joined && joined.record.result == .expired)
        let ran = await wake.map(\.handler).sorted()
        #expect(ran == ["q2", "q3", "q4", "stalled"], "\(ran)")
        for name in ["q1", "q5", "q2"] { #expect(try coordinator.state.history(of: name).count == 1, "\(name)") }
    }
}
