import FetchdConfig
import FetchdTestSupport
import Foundation
import Testing

/// The usage keys of a handler: which sources it learns from.
@Suite("Usage config")
struct UsageConfigTests {
    /// Every source is accepted, repeats are dropped, and the order is kept.
    @Test func everyUsageSourceIsAccepted() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        try folder.write("""
            [[handler]]
            name = "news"
            kind = "exec"
            command = ["/usr/bin/fetch-news"]
            usage = ["session", "reads", "session", "explicit"]

            [[handler]]
            name = "plain"
            kind = "exec"
            command = ["/usr/bin/fetch-plain"]

            """, to: "handlers.d/news.toml")
        let loaded = try ConfigLoader.load(mainFile: folder.file("fetchd.toml"), requireMainFile: false)
        #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
        let news = try #require(loaded.handler(named: "news"))
        #expect(news.usage == [.session, .reads, .explicit])
        #expect(news.learnsUsage)
        #expect(try #require(loaded.handler(named: "plain")).usage.isEmpty)
    }
}
