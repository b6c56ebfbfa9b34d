import FetchdDaemon
import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// The http slots and libcurl's connection caps, end to end through the coordinator against a
/// real server that counts what it sees.
@Suite(.serialized)
struct HTTPLimitsTests {
    private struct Stats: Decodable {
        var maxActive: [String: Int]
        var connections: Int
        enum CodingKeys: String, CodingKey {
            case maxActive = "max_active"
            case connections
        }
    }

    private func stats(_ server: TestHTTPServer) async throws -> Stats {
        try JSONDecoder().decode(Stats.self, from: Data(try await server.get("/stats").utf8))
    }

    /// `count` http handlers named `prefix0`... on `url(index)`, fetched only on request.
    private func handlers(_ prefix: String, _ count: Int, deadline: String? = nil, url: (Int) -> String) -> String {
        (0..<count).map { index in
            """
            [[handler]]
            name = "\(prefix)\(index)"
            kind = "http"
            url = "\(url(index))"
            \(deadline.map { "deadline = \"\($0)\"" } ?? "")

            """
        }.joined()
    }

    /// The server answers each request after 3 s, keeping the connection or closing it. Over
    /// plain http (HTTP/1.1, which never multiplexes) the six fetches of one host run on
    /// connections of their own at once, each done in 3 s of its 5 s deadline: none waits for
    /// another's answer (waiting to learn whether a connection can be shared, it would be done
    /// in 6 s at the earliest, and one at a time when the server closes its connections).
    @Test(arguments: ["", "&close"])
    func slowAnswersOverPlainHTTPUseParallelConnections(closing: String) async throws {
        let server = try TestHTTPServer(.counting)
        let directory = try TemporaryDirectory("http-limits")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(
            in: directory, main: "http_max_host_connections = 6",
            handlers: handlers("slow", 6, deadline: "5s") { "http://127.0.0.1:\(server.port)/slow/\($0)?seconds=3\(closing)" })
        let records = await coordinator.runDue(trigger: .manual)
        #expect(records.count == 6 && records.allSatisfy { $0.result == .newData }, "\(records.map { ($0.handler, $0.result) })")
        let seen = try await stats(server)
        #expect(seen.maxActive["127.0.0.1", default: 0] > 1, "\(seen.maxActive)")
    }

    /// More fetches than the per-host cap wait for their slots, where their deadlines have not
    /// started, and never inside libcurl: here three of a host's fetches arrive there through
    /// a redirect from another host, so the slots (which count the host the url names) let six
    /// through to it at once. Each fetch takes 2 s of its 3 s deadline; waiting for a
    /// connection in libcurl behind the others would cost it 2 s more.
    @Test func noFetchWaitsForAConnectionWithItsDeadlineRunning() async throws {
        let server = try TestHTTPServer(.counting)
        let directory = try TemporaryDirectory("http-limits")
        defer { directory.remove() }
        let target = "http://127.0.0.1:\(server.port)"
        let coordinator = try TestConfig.coordinator(
            in: directory, main: "http_max_transfers = 16\nhttp_max_host_connections = 3",
            handlers: handlers("direct", 6, deadline: "3s") { "\(target)/slow/direct\($0)?seconds=2" }
                + handlers("moved", 3, deadline: "3s") { "http://localhost:\(server.port)/goto/\(target)/slow/moved\($0)?seconds=2" })
        let records = await coordinator.runDue(trigger: .manual)
        #expect(records.count == 9 && records.allSatisfy { $0.result == .newData }, "\(records.map { ($0.handler, $0.result) })")
    }

    @Test func manyHandlersOnOneHostNeverExceedThePerHostCap() async throws {
        let server = try TestHTTPServer(.counting)
        let directory = try TemporaryDirectory("http-limits")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(
            in: directory, main: "http_max_transfers = 16\nhttp_max_host_connections = 2",
            handlers: handlers("slow", 8) { "http://127.0.0.1:\(server.port)/slow/\($0)" })
        let records = await coordinator.runDue(trigger: .manual)
        #expect(records.count == 8 && records.allSatisfy { $0.result == .newData }, "\(records)")
        let seen = try await stats(server)
        // Two at a time: never more, and the cap was reached (the test can tell the difference).
        #expect(seen.maxActive["127.0.0.1"] == 2, "\(seen.maxActive)")
        // Eight fetches over the two connections: kept alive and reused, not one per fetch.
        #expect(seen.connections <= 3, "\(seen.connections) connections for 8 fetches")
        // The next wake reuses them too (plus the one /stats used).
        _ = await coordinator.fetch("slow0", trigger: .manual)
        #expect(try await stats(server).connections <= seen.connections + 1)
    }

    @Test func aSlowHostDoesNotHoldUpTheOthers() async throws {
        let server = try TestHTTPServer(.counting)
        let directory = try TemporaryDirectory("http-limits")
        defer { directory.remove() }
        // "localhost" and "127.0.0.1" are two hosts to fetchd and libcurl, one server here.
        let coordinator = try TestConfig.coordinator(
            in: directory, main: "http_max_transfers = 4\nhttp_max_host_connections = 2",
            handlers: handlers("slow", 8) { "http://127.0.0.1:\(server.port)/slow/\($0)" }
                + handlers("fast", 2) { "http://localhost:\(server.port)/fast/\($0)" })
        let records = await coordinator.runDue(trigger: .manual)
        #expect(records.count == 10 && records.allSatisfy { $0.result == .newData }, "\(records)")
        let slow = records.filter { $0.handler.hasPrefix("slow") }
        let fast = records.filter { $0.handler.hasPrefix("fast") }
        // The slow host gets two slots at a time, so its last fetch starts about 4.5 s in; the
        // fast host's fetches took the free slots at once instead of queueing behind it.
        let lastSlowStart = try #require(slow.map(\.startedAt).max())
        #expect(fast.allSatisfy { $0.finishedAt < lastSlowStart }, "\(records.map { ($0.handler, $0.startedAt, $0.finishedAt) })")
        #expect(try await stats(server).maxActive["127.0.0.1"] == 2)
    }
}
