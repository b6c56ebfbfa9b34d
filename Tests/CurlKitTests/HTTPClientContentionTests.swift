import CurlKit
import FetchdTestSupport
import Foundation
import Testing

/// The `HTTPClient` driver thread under contention: fetches submitted from many tasks at once,
/// a third of them cancelled while they wait or transfer, the connection limits changed
/// meanwhile (a reload), then a shutdown with fetches in flight. Every fetch must end, with its
/// whole body or `.cancelled`. Under `make test-tsan` this is also the test that would show a
/// race between the callers, the mailbox, the driver and the continuations it resumes.
@Suite(.timeLimit(.minutes(3)))
struct HTTPClientContentionTests {
    private static let bodyBytes = 256 * 1024

    /// "ok" for a 200 with the whole body, "cancelled", or what else happened.
    private static func describe(_ result: Result<HTTPResponse, HTTPFailure>) -> String {
        switch result {
        case .success(let response) where response.status == 200 && response.bodyBytes == bodyBytes: "ok"
        case .success(let response): "status \(response.status), \(response.bodyBytes) bytes"
        case .failure(.cancelled): "cancelled"
        case .failure(let failure): "\(failure)"
        }
    }

    /// Fetches `request`; when `cancelAfterMilliseconds` is set, cancels the fetch after that long
    /// unless it has ended.
    private static func fetch(_ client: HTTPClient, _ request: HTTPRequest, cancelAfterMilliseconds: Int?) async -> String {
        await withTaskGroup(of: String?.self) { group in
            group.addTask {
                do throws(HTTPFailure) { return describe(.success(try await client.fetch(request))) } catch { return describe(.failure(error)) }
            }
            if let cancelAfterMilliseconds {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(cancelAfterMilliseconds))
                    return nil
                }
            }
            var outcome = "no outcome"
            while let next = await group.next() {
                guard let next else { group.cancelAll(); continue }  // the timer: cancel the fetch
                outcome = next
                group.cancelAll()  // the fetch ended: stop the timer
            }
            return outcome
        }
    }

    @Test func submissionsCancellationsReloadsAndAShutdownInterleave() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        try Data(repeating: 0x61, count: Self.bodyBytes).write(to: URL(fileURLWithPath: directory.file("body")))
        let server = try TestHTTPServer.files(in: directory.path)
        defer { server.stop() }
        let client = HTTPClient(limits: .init(maxConnections: 4, maxHostConnections: 2))
        defer { client.shutdown() }
        let url = "http://127.0.0.1:\(server.port)/body"
        let request: @Sendable (String) -> HTTPRequest = { name in
            HTTPRequest(url: url, outputPath: directory.file(name), userAgent: "test", timeoutMilliseconds: 60_000,
                        maxBytes: 1 << 20)
        }

        // 120 fetches, every third cancelled after 0 to 19 ms, while the limits change 40 times.
        let outcomes = await withTaskGroup(of: (index: Int, outcome: String)?.self) { group in
            group.addTask {
                for round in 0..<40 {
                    client.update(.init(maxConnections: 1 + round % 5, maxHostConnections: 1 + round % 3))
                    try? await Task.sleep(for: .milliseconds(5))
                }
                return nil
            }
            for index in 0..<120 {
                group.addTask {
                    let cancelAfter = index % 3 == 0 ? index % 20 : nil
                    return (index, await Self.fetch(client, request("fetch-\(index)"), cancelAfterMilliseconds: cancelAfter))
                }
            }
            var outcomes: [Int: String] = [:]
            for await case let (index, outcome)? in group { outcomes[index] = outcome }
            return outcomes
        }
        #expect(outcomes.count == 120)
        let uncancelled = outcomes.filter { $0.key % 3 != 0 && $0.value != "ok" }
        #expect(uncancelled.isEmpty, "fetches nobody cancelled that did not bring their body: \(uncancelled)")
        let cancelled = outcomes.filter { $0.key % 3 == 0 && $0.value != "ok" && $0.value != "cancelled" }
        #expect(cancelled.isEmpty, "cancelled fetches that ended otherwise: \(cancelled)")

        // A shutdown while 20 fetches transfer or wait for a connection ends every one of them.
        let stopped = await withTaskGroup(of: String.self) { group in
            for index in 0..<20 {
                group.addTask { await Self.fetch(client, request("late-\(index)"), cancelAfterMilliseconds: nil) }
            }
            try? await Task.sleep(for: .milliseconds(10))
            client.shutdown()
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(stopped.count == 20 && stopped.allSatisfy { $0 == "ok" || $0 == "cancelled" }, "\(stopped)")
        #expect(await Self.fetch(client, request("after"), cancelAfterMilliseconds: nil) == "cancelled",
                "a fetch after the shutdown must fail at once")
    }
}
