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
    private func handlers(_ prefix: String, _ count: Int, url: (Int) -> String) -> String {
        (0..<count).map { index in
            """
            [[handler]]
            name = "\(prefix)\(index)"
            kind = "http"
            url = "\(url(index))"

            """
        }.joined()
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
