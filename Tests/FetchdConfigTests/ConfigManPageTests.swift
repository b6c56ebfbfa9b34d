@testable import FetchdConfig
import Foundation
import Testing

/// fetchd.toml(5) is the configuration reference: every key the parser accepts has an entry.
@Suite("fetchd.toml(5) documents every key")
struct ConfigManPageTests {
    /// The page's scdoc source, by line.
    static func page() throws -> [Substring] {
        try String(contentsOf: PackagePaths.configManPage, encoding: .utf8).split(separator: "\n")
    }

    /// Whether `lines` hold an entry for `key`: a line that starts with it in bold (`*key* = ...`),
    /// not a mention in another key's text.
    static func hasEntry(_ key: String, in lines: [Substring]) -> Bool {
        lines.contains { $0.hasPrefix("*\(key)* ") || $0 == "*\(key)*" }
    }

    /// Keys of the main file (and the `[[handler]]` array it may hold).
    @Test func everyMainFileKey() throws {
        let lines = try Self.page()
        for key in DaemonConfig.knownKeys + ["handler"] {
            #expect(Self.hasEntry(key, in: lines), "fetchd.toml(5) has no entry for the main file's key \"\(key)\"")
        }
    }

    /// Keys of `[[handler]]` tables, every kind's.
    @Test func everyHandlerKey() throws {
        let lines = try Self.page()
        for key in HandlerKeys.known {
            #expect(Self.hasEntry(key, in: lines), "fetchd.toml(5) has no entry for the handler key \"\(key)\"")
        }
    }
}
