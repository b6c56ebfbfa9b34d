import FetchdClient
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `FetchdClient` library against the real fetchd on a private session bus: the calls
/// an application makes, the `FetchCompleted` events it receives without running a loop, the
/// content read through the passed descriptor, and fetchd's named errors.
@Suite(.serialized)
struct FetchdClientTests {
    @Test func registersFetchesAndReadsThroughTheDescriptor() async throws {
        let www = try TemporaryDirectory("fetchd-client-www")
        let file = try www.write("first\n", to: "news.txt")
        let server = try TestHTTPServer.files(in: www.path)
        let setup = try await BusDaemon()
        let fetchd = setup.fetchd

        // Every option shape a handler file's keys take: s, x, b, as, a{ss}.
        let events = fetchd.completions()
        let registered = try await fetchd.register("news", options: [
            "kind": .string("http"), "url": .string(server.url("/news.txt")), "retain": .integer(3),
            "enabled": .bool(true), "usage": .strings(["explicit"]), "headers": .stringMap(["X-Client": "swift"]),
        ])
        #expect(registered == "news@\(getuid())")
        #expect(try await fetchd.handlers() == ["news"])
        // A registration's first fetch starts at once; its event reaches the stream unasked.
        let first = try await Self.next(of: events, timeoutSeconds: 20)
        #expect(first?.name == "news" && first?.hasNewData == true && first?.version != nil, "\(String(describing: first))")

        // A newer file (another second, so If-Modified-Since does not answer 304): new data.
        try "second version\n".write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: file)
        let fetched = try await fetchd.fetch("news", timeout: .seconds(20))
        #expect(fetched.hasNewData && fetched.version != first?.version, "\(fetched)")

        let snapshot = try await fetchd.openSnapshot("news")
        #expect(snapshot.metadata.version == fetched.version)
        #expect(try snapshot.read() == Data("second version\n".utf8))
        #expect(try snapshot.read().count == 15, "a second read starts from the beginning again")
        #expect(snapshot.metadata.bytes == 15 && snapshot.metadata.sha256.count == 64)
        #expect(snapshot.metadata.contentType == "text/plain" && snapshot.metadata.lastModified != nil)
        #expect(abs(snapshot.metadata.fetchedAt.timeIntervalSinceNow) < 60, "\(snapshot.metadata.fetchedAt)")
        #expect(fcntl(snapshot.fileDescriptor, F_GETFD) & FD_CLOEXEC != 0, "the descriptor leaks into children")

        let status = try await fetchd.handler("news")
        #expect(status["kind"] == .string("http") && status["last_result"] == .string("newData"), "\(status)")
        #expect(status["enabled"] == .bool(true))
        let properties = try await fetchd.properties(of: "news")
        #expect(properties["LastResult"] == .string("newData") && properties["Version"] == .string(fetched.version ?? "-"),
                "\(properties)")
        #expect(try await fetchd.handlerObject("news").hasPrefix("/org/fetchd/Fetchd1/handler/news_40"))
        try await fetchd.reportUse("news")
        try await fetchd.unregister("news")
        #expect(try await fetchd.handlers() == [])
        await setup.stop()
    }

    @Test func failuresAreNamedAsFetchdNamesThem() async throws {
        let setup = try await BusDaemon()
        let fetchd = setup.fetchd
        let notFound = await Self.failure { () async throws(FetchdError) in _ = try await fetchd.openSnapshot("nothere") }
        #expect(notFound?.name == FetchdError.Name.notFound && notFound?.message.contains("nothere") == true, "\(String(describing: notFound))")
        let invalid = await Self.failure { () async throws(FetchdError) in
            try await fetchd.register("bad", options: ["kind": .string("http"), "url": .string("http://example.com/"),
                                                       "bogus": .integer(1), "retain": .integer(0), "max_bytes": .double(1.5)])
        }
        #expect(invalid?.name == FetchdError.Name.invalidArguments, "\(String(describing: invalid))")
        // Each refusal, and a double that arrived as one (`d`).
        for expected in ["bogus: unknown key", "retain: 0 is out of range", "max_bytes: expected an integer, found a floating-point number"] {
            #expect(invalid?.message.contains(expected) == true, "\(String(describing: invalid))")
        }
        let unsent = await Self.failure { () async throws(FetchdError) in
            try await fetchd.register("odd", options: ["url": .unsupported(signature: "ai")])
        }
        #expect(unsent?.name == FetchdError.Name.invalidArguments, "\(String(describing: unsent))")

        // A fetch that does not end within the wait: Timeout, from this side.
        let stalled = try TestHTTPServer.stalled()
        try await fetchd.register("slow", options: ["kind": .string("http"), "url": .string(stalled.url("/")), "deadline": .string("2s")])
        let late = await Self.failure { () async throws(FetchdError) in _ = try await fetchd.fetch("slow", timeout: .milliseconds(300)) }
        #expect(late?.name == FetchdError.Name.timeout, "\(String(describing: late))")

        // The bus goes away: streams end, calls fail as Disconnected.
        let events = fetchd.completions()
        let (code, log) = await setup.daemon.stopWithoutBlocking()
        #expect(code == 0, "\(log)")
        await setup.bus.stop()
        // The stream ends (after the stalled fetch's end, perhaps, as fetchd stopped it).
        while let event = try await Self.next(of: events, timeoutSeconds: 10) { #expect(event.name == "slow", "\(event)") }
        let lost = await Self.failure { () async throws(FetchdError) in _ = try await fetchd.handlers() }
        #expect(lost?.name == FetchdError.Name.disconnected, "\(String(describing: lost))")
    }

    /// The error `body` throws, nil when it succeeds.
    static func failure(_ body: () async throws(FetchdError) -> Void) async -> FetchdError? {
        do throws(FetchdError) { try await body() } catch { return error }
        return nil
    }

    /// The next event of `events`; nil when the stream ends. Fails the test after `timeoutSeconds`.
    static func next(of events: AsyncStream<FetchCompleted>, timeoutSeconds: Double) async throws -> FetchCompleted? {
        try await withThrowingTaskGroup(of: FetchCompleted?.self) { group in
            group.addTask {
                var iterator = events.makeAsyncIterator()
                return await iterator.next()
            }
            group.addTask {
                try await Task.sleep(for: .seconds(SanitizerRun.scaled(timeoutSeconds)))
                throw TimedOut()
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    struct TimedOut: Error {}
}
