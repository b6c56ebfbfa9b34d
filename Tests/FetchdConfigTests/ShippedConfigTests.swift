@testable import FetchdConfig
import FetchdCore
import FetchdTestSupport
import Foundation
import RegexBuilder
import Testing

/// The packaged `config/fetchd.toml` stays valid and documents every key with its default.
@Suite("Shipped config/fetchd.toml")
struct ShippedConfigTests {
    /// Whether the packaged main file exists yet.
    static let shippedConfigExists = FileManager.default.fileExists(atPath: PackagePaths.shippedConfig.path)

    /// A line holding `key = value` behind a comment sign.
    static func commentedOut(_ key: String) -> Regex<Substring> {
        Regex { "#"; ZeroOrMore(" "); key; ZeroOrMore(" "); "="; ZeroOrMore(.any) }
    }

    /// The file parses and checks clean, together with the drop-in folder next to it.
    @Test(.enabled(if: shippedConfigExists, "config/fetchd.toml does not exist yet"))
    func checksClean() {
        let diagnostics = ConfigLoader.check(path: PackagePaths.shippedConfig.path)
        #expect(diagnostics.isEmpty, "\(diagnostics.map(\.description).joined(separator: "\n"))")
    }

    /// fetchd.toml(5) says which shipped examples are enabled as shipped: each file with an
    /// enabled handler is named there, and the page never says none is.
    @Test func thePageSaysWhichExamplesAreEnabled() throws {
        let page = try String(contentsOf: PackagePaths.configManPage, encoding: .utf8)
        let folder = PackagePaths.shippedConfig.deletingLastPathComponent().appendingPathComponent("handlers.d").path
        var enabled: [String] = []
        for file in ConfigLoader.handlerFiles(in: folder) {
            let (handlers, diagnostics) = ConfigLoader.loadHandlers([file], daemon: DaemonConfig())
            #expect(diagnostics.isEmpty, "\(diagnostics)")
            if handlers.contains(where: \.enabled) { enabled.append(PathName.lastComponent(of: file)) }
        }
        #expect(!enabled.isEmpty)
        #expect(!page.contains("none enabled"), "fetchd.toml(5) says no example is enabled; \(enabled) are")
        for name in enabled { #expect(page.contains("_\(name)_"), "fetchd.toml(5) does not name the enabled example \(name)") }
    }

    /// Every key the main file accepts appears exactly once commented out (`# key = ` or
    /// `#key = `), and uncommenting them all gives exactly the built-in defaults.
    @Test(.enabled(if: shippedConfigExists, "config/fetchd.toml does not exist yet"))
    func documentsEveryKeyWithItsDefault() throws {
        let text = try String(contentsOf: PackagePaths.shippedConfig, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var uncommented: [String] = []
        for key in DaemonConfig.knownKeys {
            let found = lines.filter { $0.wholeMatch(of: Self.commentedOut(key)) != nil }
            #expect(!found.isEmpty, "config/fetchd.toml does not document \"# \(key) = ...\"")
            #expect(found.count <= 1, "config/fetchd.toml documents \"\(key)\" \(found.count) times")
            uncommented += found.prefix(1).map { String($0.drop { $0 == "#" || $0 == " " }) }
        }
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let main = try folder.write(uncommented.joined(separator: "\n") + "\n", to: "fetchd.toml")
        let loaded: LoadedConfig
        do {
            loaded = try ConfigLoader.load(mainFile: main)
        } catch {
            Issue.record("the commented-out settings do not load: \(error)")
            return
        }
        var daemon = loaded.daemon
        let defaults = DaemonConfig()
        #expect(daemon.socketPath == defaults.socketPath)
        #expect(daemon.handlersDirectory == defaults.handlersDirectory)
        daemon.socketPathOverride = nil
        daemon.controlGroup = nil  // an example group name is documentation, not a default
        #expect(daemon == defaults)
    }

    /// Every key a `[[handler]]` table accepts appears exactly once commented out, in the
    /// handler reference at the end of the file.
    @Test(.enabled(if: shippedConfigExists, "config/fetchd.toml does not exist yet"))
    func documentsEveryHandlerKey() throws {
        let text = try String(contentsOf: PackagePaths.shippedConfig, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for key in HandlerKeys.known {
            let found = lines.filter { $0.wholeMatch(of: Self.commentedOut(key)) != nil }
            #expect(found.count == 1, "config/fetchd.toml documents the handler key \"\(key)\" \(found.count) times, not once")
        }
    }
}
