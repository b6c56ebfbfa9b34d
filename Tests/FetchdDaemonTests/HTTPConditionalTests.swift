import CurlKit
import FetchdConfig
import FetchdDaemon
import FetchdState
import FetchdTestSupport
import Foundation
import Logging
import Testing

/// Conditional requests end to end through the coordinator: validators are kept in the state
/// database, sent on the next fetch, and a 304 is `noData` that leaves the snapshot alone.
@Suite(.serialized)
struct HTTPConditionalTests {
    /// A coordinator with one http handler, "page", fetched only on request.
    private func coordinator(_ directory: TemporaryDirectory, url: String, extra: String = "") throws -> FetchCoordinator {
        try TestConfig.coordinator(in: directory, handlers: """
            [[handler]]
            name = "page"
            kind = "http"
            url = "\(url)"
            min_interval = "never"
            \(extra)
            """)
    }

    @Test func etagRoundTripTurnsA304IntoNoData() async throws {
        let server = try TestHTTPServer(.conditional)
        let directory = try TemporaryDirectory("conditional")
        defer { directory.remove() }
        let coordinator = try coordinator(directory, url: server.url("/etag"))
        #expect(await coordinator.fetch("page", trigger: .manual)?.result == .newData)
        let state = try StateStore(path: directory.file("state/state.sqlite"))
        #expect(try state.state(of: "page")?.etag == "\"v1\"")
        let second = await coordinator.fetch("page", trigger: .manual)
        #expect(second?.result == .noData && second?.version == nil)
        // The resource changes: a new version with the new validator.
        try await server.get("/bump")
        #expect(await coordinator.fetch("page", trigger: .manual)?.result == .newData)
        #expect(try state.state(of: "page")?.etag == "\"v2\"")
        let content = try String(contentsOfFile: directory.file("cache/page/latest/content"), encoding: .utf8)
        #expect(content == "etag body 2")
        var info = stat()  // readable by everyone, made so without a chmod when the umask allows
        #expect(stat(directory.file("cache/page/latest/content"), &info) == 0 && info.st_mode & 0o7777 == 0o644)
        let metadata = try String(contentsOfFile: directory.file("cache/page/latest/meta.json"), encoding: .utf8)
        #expect(metadata.contains("\"status\" : \"200\"") && metadata.contains("first_byte_ms"), "\(metadata)")
    }

    @Test func lastModifiedRoundTrip() async throws {
        let server = try TestHTTPServer(.conditional)
        let directory = try TemporaryDirectory("conditional")
        defer { directory.remove() }
        let coordinator = try coordinator(directory, url: server.url("/lastmod"))
        #expect(await coordinator.fetch("page", trigger: .manual)?.result == .newData)
        #expect(await coordinator.fetch("page", trigger: .manual)?.result == .noData)
        let state = try StateStore(path: directory.file("state/state.sqlite"))
        #expect(try state.state(of: "page")?.lastModified == "Sat, 21 Nov 2026 08:00:00 GMT")
        #expect(try state.state(of: "page")?.etag == nil)
    }

    @Test func noSnapshotMeansNoConditionalRequest() async throws {
        let server = try TestHTTPServer(.conditional)
        let directory = try TemporaryDirectory("conditional")
        defer { directory.remove() }
        let coordinator = try coordinator(directory, url: server.url("/etag"))
        #expect(await coordinator.fetch("page", trigger: .manual)?.result == .newData)
        // The snapshot is lost (cache wiped) but the state still has the ETag: fetch it whole again.
        try FileManager.default.removeItem(atPath: directory.file("cache/page"))
        #expect(await coordinator.fetch("page", trigger: .manual)?.result == .newData)
        #expect(FileManager.default.fileExists(atPath: directory.file("cache/page/latest/content")))
    }

    @Test func retryAfterPushesTheNextEligibleFetch() async throws {
        let server = try TestHTTPServer(.conditional)
        let directory = try TemporaryDirectory("conditional")
        defer { directory.remove() }
        let coordinator = try coordinator(directory, url: server.url("/retry"))
        let record = await coordinator.fetch("page", trigger: .manual)
        #expect(record?.result.name == "failed" && record?.result.reason == "HTTP 429")
        let state = try StateStore(path: directory.file("state/state.sqlite"))
        let notBefore = try #require(try state.state(of: "page")?.notBefore)
        #expect(abs(notBefore.timeIntervalSinceNow - 120) < 10, "Retry-After: 120 gave \(notBefore)")
    }

    @Test func configuredHeadersAndUserAgentAreSent() async throws {
        let server = try TestHTTPServer(.conditional)
        let directory = try TemporaryDirectory("conditional")
        defer { directory.remove() }
        let coordinator = try coordinator(directory, url: server.url("/echo"), extra: """
            headers = { Accept = "application/json", X-Fetchd-Test = "yes" }
            user_agent = "fetchd-test/1"
            accept_encoding = "identity"
            """)
        #expect(await coordinator.fetch("page", trigger: .manual)?.result == .newData)
        let echoed = try String(contentsOfFile: directory.file("cache/page/latest/content"), encoding: .utf8)
        for expected in ["Accept: application/json", "X-Fetchd-Test: yes", "User-Agent: fetchd-test/1",
                         "Accept-Encoding: identity"] {
            #expect(echoed.contains(expected), "\(echoed)")
        }
    }

    /// A validator holding a bare CR (`"abc"\rX-Injected: evil`) would become a second header
    /// wherever a server or proxy ends lines at CR: it is neither kept nor sent back, and the
    /// fetch still counts.
    @Test(arguments: ["/etag-cr", "/lastmod-cr"])
    func aValidatorWithAControlCharacterIsNeitherKeptNorSent(path: String) async throws {
        let server = try TestHTTPServer(.conditional)
        let directory = try TemporaryDirectory("conditional")
        defer { directory.remove() }
        let coordinator = try coordinator(directory, url: server.url(path))
        #expect(await coordinator.fetch("page", trigger: .manual)?.result == .newData)
        let state = try StateStore(path: directory.file("state/state.sqlite"))
        #expect(try state.state(of: "page")?.etag == nil)
        #expect(try state.state(of: "page")?.lastModified == nil)
        #expect(await coordinator.fetch("page", trigger: .manual)?.result == .noData)
        #expect(try await server.get("/seen") == #"["", ""]"#)
    }

    /// A validator kept before (in the state database) with a control character is not sent.
    @Test func aStoredValidatorWithAControlCharacterIsNotSent() async throws {
        let server = try TestHTTPServer(.conditional)
        let directory = try TemporaryDirectory("conditional")
        defer { directory.remove() }
        var request = HTTPRequest(url: server.url("/echo"), outputPath: directory.file("echo"), userAgent: "test",
                                  timeoutMilliseconds: 10_000, maxBytes: 65_536)
        request.ifNoneMatch = "\"abc\"\rX-Injected: evil"
        request.ifModifiedSince = "Sat, 21 Nov 2026 08:00:00 GMT\u{0}"
        #expect(!request.isConditional)
        _ = try await HTTPClient.shared.fetch(request)
        let echoed = try String(contentsOfFile: directory.file("echo"), encoding: .utf8)
        #expect(!echoed.contains("If-None-Match") && !echoed.contains("If-Modified-Since") && !echoed.contains("X-Injected"),
                "\(echoed)")
    }

    /// A 304 to the first, unconditional request leaves nothing to keep: a failure, not a success.
    @Test func a304ToAnUnconditionalRequestFails() async throws {
        let server = try TestHTTPServer(.conditional)
        let directory = try TemporaryDirectory("conditional")
        defer { directory.remove() }
        let coordinator = try coordinator(directory, url: server.url("/always-304"))
        let record = await coordinator.fetch("page", trigger: .manual)
        #expect(record?.result.name == "failed", "\(String(describing: record))")
        #expect(record?.result.reason?.hasPrefix("HTTP 304 (not modified) to a request that was not conditional") == true)
        #expect(!FileManager.default.fileExists(atPath: directory.file("cache/page/latest/content")))
    }
}
