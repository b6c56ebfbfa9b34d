@testable import FetchdConfig
import Foundation
import Testing

/// fetchd.toml(5) is the configuration reference: every key the parser accepts has an entry.
@Suite("fetchd.toml(5) documents every key")
struct ConfigManPageTests {
    /// The page's scdoc source.
    static func page() throws -> String {
        try String(contentsOf: PackagePaths.configManPage, encoding: .utf8)
    }

    /// Keys of the main file, in bold (`*key*`), as each entry of the page begins.
    @Test func everyMainFileKey() throws {
        let text = try Self.page()
        for key in DaemonConfig.knownKeys + ["handler"] {
            #expect(text.contains("*\(key)*"), "fetchd.toml(5) has no entry for the main file's key \"\(key)\"")
        }
    }

    /// Keys of `[[handler]]` tables, every kind's.
    @Test func everyHandlerKey() throws {
        let text = try Self.page()
        for key in HandlerConfig.knownKeys {
            #expect(text.contains("*\(key)*"), "fetchd.toml(5) has no entry for the handler key \"\(key)\"")
        }
    }
}
