import FetchdTestSupport
import Foundation
import Testing

/// The man pages are the reference: every subcommand and option the built tools accept (as
/// swift-argument-parser describes them, `--experimental-dump-help`) is in fetchctl(1) and
/// fetchd(8). The config keys are checked against fetchd.toml(5) in FetchdConfigTests.
@Suite struct ManPageTests {
    /// What `--experimental-dump-help` says of a command, the parts checked here.
    struct Command: Decodable {
        struct Argument: Decodable {
            struct Name: Decodable {
                /// "long", "short" or "longWithSingleDash".
                let kind: String
                let name: String
            }
            let names: [Name]?
            /// False for hidden options (test hooks), which the pages leave out.
            let shouldDisplay: Bool?
        }
        let commandName: String
        let arguments: [Argument]?
        let subcommands: [Command]?

        /// Every option shown in `--help`, as written on a command line: `--name`, `-n`.
        var options: [String] {
            let shown = (arguments ?? []).filter { $0.shouldDisplay != false }
            let names: [Argument.Name] = shown.flatMap { $0.names ?? [] }
            return names.map { name in (name.kind == "long" ? "--" : "-") + name.name }
        }
    }

    private struct ToolInfo: Decodable { let command: Command }

    /// Options every command has, documented once in the page's OPTIONS section.
    static let common: Set = ["--version", "-h", "--help"]

    static func page(_ name: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../docs/man/\(name).scd").standardizedFileURL
        return try String(contentsOf: url, encoding: .utf8)
    }

    static func describe(_ tool: String) async throws -> Command {
        let (status, output) = try await ChildProcess.runWithoutBlocking(
            TestBinaries.path(of: tool), ["--experimental-dump-help"])
        #expect(status == 0, "\(output)")
        return try JSONDecoder().decode(ToolInfo.self, from: Data(output.utf8)).command
    }

    /// The lines of `page` from the heading `# name` to the next heading.
    static func section(_ name: String, of page: String) -> [Substring] {
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: Substring("# " + name)) else { return [] }
        let rest = lines[(start + 1)...]
        return Array(rest.prefix { !$0.hasPrefix("# ") })
    }

    /// Each subcommand has an entry in COMMANDS (a line starting with its bold name) that shows
    /// every option of its own; the common ones are in OPTIONS.
    @Test func fetchctlsPageHasEverySubcommandAndOption() async throws {
        let tool = try await Self.describe("fetchctl")
        let page = try Self.page("fetchctl.1")
        let commands = Self.section("COMMANDS", of: page)
        let options = Self.section("OPTIONS", of: page).joined(separator: "\n")
        let subcommands = tool.subcommands ?? []
        #expect(subcommands.count >= 12, "the dump lists \(subcommands.count) subcommands")
        let names = Set(subcommands.map(\.commandName))
        for subcommand in subcommands {
            guard let start = commands.firstIndex(where: { $0.hasPrefix("*\(subcommand.commandName)*") }) else {
                Issue.record("fetchctl(1) COMMANDS has no entry starting with *\(subcommand.commandName)*")
                continue
            }
            // The entry runs to the next subcommand's entry.
            let entry = commands[start...].dropFirst().prefix { line in
                !names.contains { line.hasPrefix("*\($0)*") }
            }
            let text = ([commands[start]] + entry).joined(separator: "\n")
            for option in subcommand.options where !Self.common.contains(option) {
                #expect(text.contains("*\(option)*"),
                        "fetchctl(1): the entry of \(subcommand.commandName) does not show \(option)")
            }
        }
        for option in tool.options {
            #expect(options.contains("*\(option)*"), "fetchctl(1) OPTIONS does not describe \(option)")
        }
    }

    @Test func fetchdsPageHasEveryOption() async throws {
        let tool = try await Self.describe("fetchd")
        let options = Self.section("OPTIONS", of: try Self.page("fetchd.8")).joined(separator: "\n")
        #expect(tool.options.count >= 10, "the dump lists \(tool.options)")
        for option in tool.options {
            #expect(options.contains("*\(option)*"), "fetchd(8) OPTIONS does not describe \(option)")
        }
    }

    /// Every `MESSAGE_ID` fetchd logs is listed in fetchd(8).
    @Test func fetchdsPageListsEveryMessageID() throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/FetchdSystemd/MessageID.swift").standardizedFileURL
        let ids = try String(contentsOf: source, encoding: .utf8).matches(of: /"([0-9a-f]{32})"/).map { String($0.output.1) }
        #expect(ids.count >= 7, "\(ids)")
        let page = try Self.page("fetchd.8")
        for id in ids { #expect(page.contains("*\(id)*"), "fetchd(8) does not list MESSAGE_ID \(id)") }
    }

    /// Installed pages cite installed files and other pages, never the source tree (a
    /// repository path or a make target of the tests means nothing to an installed reader).
    @Test func noPageCitesTheSourceTree() throws {
        for name in ["fetchd.8", "fetchctl.1", "fetchd.toml.5"] {
            let page = try Self.page(name)
            for match in page.matches(of: /_(docs|bench|Tests|Sources|systemd|config)\/[^_]*_|\*make (io-faults|test|torture|bench[-a-z]*)\*/) {
                Issue.record("\(name) cites the source tree: \(match.output.0)")
            }
        }
    }

    /// What the pages and `--help` say of exit statuses matches the code: `fetchctl fetch
    /// --wait` exits 1 for an expired fetch as for a failed one; `--socket` before the command works.
    @Test func fetchctlsHelpAndPageSayWhatItDoes() async throws {
        let (_, help) = try await ChildProcess.runWithoutBlocking(TestBinaries.path(of: "fetchctl"), ["fetch", "--help"])
        #expect(help.contains("expired"), "fetchctl fetch --help: \(help)")
        #expect(!(try Self.page("fetchctl.1")).contains("is an error"), "fetchctl(1) calls a working command line an error")
    }
}
