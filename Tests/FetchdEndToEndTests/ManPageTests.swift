import FetchdControl
import FetchdTestSupport
import Foundation
import Testing

/// The man pages are the reference: every subcommand and option the built tools accept (as
/// swift-argument-parser describes them, `--experimental-dump-help`) is in fetchctl(1) and
/// fetchd(8), and every example command line in the pages parses with the tools of this build.
/// The config keys are checked against fetchd.toml(5) in FetchdConfigTests.
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
            /// "positional", "option" (takes a value) or "flag".
            let kind: String?
        }
        let commandName: String
        let arguments: [Argument]?
        let subcommands: [Command]?
        /// The subcommand run when none is named, when the dump says it (this version's does
        /// not: see `defaultSubcommands`).
        let defaultSubcommand: String?

        /// Every option shown in `--help`, as written on a command line: `--name`, `-n`.
        var options: [String] {
            let shown = (arguments ?? []).filter { $0.shouldDisplay != false }
            let names: [Argument.Name] = shown.flatMap { $0.names ?? [] }
            return names.map { name in (name.kind == "long" ? "--" : "-") + name.name }
        }

        /// The options, as written on a command line, that take a value (`--socket PATH`).
        var valuedOptions: Set<String> {
            let valued = (arguments ?? []).filter { $0.kind == "option" }
            return Set(valued.flatMap { $0.names ?? [] }.map { ($0.kind == "long" ? "--" : "-") + $0.name })
        }

        /// Whether it takes arguments that are not options.
        var takesPositionals: Bool { (arguments ?? []).contains { $0.kind == "positional" } }
    }

    private struct ToolInfo: Decodable { let command: Command }

    /// Options every command has, documented once in the page's OPTIONS section.
    static let common: Set = ["--version", "-h", "--help"]

    /// The subcommand each tool runs when none is named (FetchctlCommand's `defaultSubcommand`,
    /// which fetchctl(1) documents), for a dump that does not say it.
    static let defaultSubcommands = ["fetchctl": "status"]

    /// The folder of the pages' scdoc sources.
    static let pagesFolder = URL(fileURLWithPath: TestBinaries.sourceTree + "/docs/man")

    static func page(_ name: String) throws -> String {
        try String(contentsOf: pagesFolder.appendingPathComponent("\(name).scd"), encoding: .utf8)
    }

    /// Every page, by name and section (`fetchd.8`, `fetchd-push.7`): each `.scd` in docs/man,
    /// which the Makefile renders and installs.
    static func pageNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: pagesFolder.path)
            .filter { $0.hasSuffix(".scd") }.map { String($0.dropLast(".scd".count)) }.sorted()
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
        let ids = try String(contentsOfFile: TestBinaries.sourceTree + "/Sources/FetchdSystemd/MessageID.swift", encoding: .utf8).matches(of: /"([0-9a-f]{32})"/).map { String($0.output.1) }
        #expect(ids.count >= 7, "\(ids)")
        let page = try Self.page("fetchd.8")
        for id in ids { #expect(page.contains("*\(id)*"), "fetchd(8) does not list MESSAGE_ID \(id)") }
    }

    /// Installed pages cite installed files and other pages, never the source tree (a
    /// repository path or a make target of the tests means nothing to an installed reader).
    @Test func noPageCitesTheSourceTree() throws {
        let names = try Self.pageNames()
        let expected = ["fetchctl.1", "fetchd-dbus.7", "fetchd-handlers.7", "fetchd-push.7", "fetchd-snapshots.7", "fetchd.8",
                        "fetchd.toml.5"]
        #expect(Set(expected).isSubset(of: names), "docs/man holds \(names)")
        for name in names {
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

    /// Every example command line of every page (a line of a ``` block that runs `fetchctl` or
    /// `fetchd`, after an optional `$ ` prompt and environment assignments) parses with the
    /// tools of this build: its subcommand exists and every option it uses is one of that
    /// subcommand's (or a common one). Checked against `--experimental-dump-help`, since running
    /// an example with `--help` appended would pass whatever the options before it.
    @Test func everyExampleCommandParses() async throws {
        let fetchctl = try await Self.describe("fetchctl")
        let fetchd = try await Self.describe("fetchd")
        var checked = 0
        for name in try Self.pageNames() {
            for line in Self.exampleCommands(in: try Self.page(name)) {
                let words = Self.words(of: line)
                let tool = words.first == "fetchd" ? fetchd : fetchctl
                for problem in Self.problems(of: Array(words.dropFirst()), for: tool) {
                    Issue.record("\(name): example \"\(line)\": \(problem)")
                }
                checked += 1
            }
        }
        #expect(checked >= 20, "only \(checked) example command lines found")
        // The check itself catches what it is for.
        #expect(!Self.problems(of: ["status", "--no-such-option"], for: fetchctl).isEmpty)
        #expect(!Self.problems(of: ["no-such-command"], for: fetchctl).isEmpty)
        #expect(!Self.problems(of: ["wake", "--peek"], for: fetchctl).isEmpty)
        #expect(!Self.problems(of: ["--no-such-option"], for: fetchd).isEmpty)
        #expect(Self.problems(of: ["--socket", "/run/x.sock", "status", "--peek"], for: fetchctl).isEmpty)
        #expect(Self.problems(of: ["history", "news", "-l", "5", "--json"], for: fetchctl).isEmpty)
    }

    /// The example command lines of a page: each line of its ``` blocks that runs fetchctl or
    /// fetchd, after an optional `$ ` prompt and `NAME=value` assignments, joined with the lines
    /// it continues on (a trailing backslash).
    static func exampleCommands(in page: String) -> [String] {
        var commands: [String] = []
        var inBlock = false
        var continued: String?
        for raw in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if raw.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                inBlock.toggle()
                continued = nil
                continue
            }
            guard inBlock else { continue }
            // scdoc writes a backslash in a literal block as two.
            var line = raw.replacingOccurrences(of: "\\\\", with: "\\")
            if let start = continued {
                line = start + " " + line.trimmingCharacters(in: .whitespaces)
                continued = nil
            } else {
                if line.hasPrefix("$ ") { line.removeFirst(2) }
                while let assignment = line.firstMatch(of: #/^[A-Za-z_][A-Za-z0-9_]*=\S*\s+/#) {
                    line.removeSubrange(assignment.range)
                }
                let tool = line.prefix { $0 != " " }
                guard tool == "fetchctl" || tool == "fetchd" else { continue }
            }
            if line.hasSuffix("\\") {
                continued = String(line.dropLast())
                continue
            }
            commands.append(line)
        }
        return commands
    }

    /// The words of a shell command line, quotes removed, up to its first operator (`|`, `&&`,
    /// `;`, a redirection, a comment).
    static func words(of line: String) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var characters = line.makeIterator()
        while let character = characters.next() {
            if let open = quote {
                if character == open {
                    quote = nil
                } else if character == "\\", open == "\"", let next = characters.next() {
                    word.append(next)
                } else {
                    word.append(character)
                }
            } else if character == "'" || character == "\"" {
                quote = character
                inWord = true
            } else if character == "\\" {
                if let next = characters.next() { word.append(next) }
                inWord = true
            } else if character == " " || character == "\t" {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else if "|;&<>".contains(character) || (character == "#" && !inWord) {
                // `2>file`: the digit names a descriptor, not an argument.
                if inWord, "<>".contains(character), word.allSatisfy(\.isNumber) { inWord = false }
                break
            } else {
                word.append(character)
                inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }

    /// What is wrong with `arguments` (without the tool's name) for `tool`, as its parser would
    /// take them: fetchctl's `--socket` and `--json` may come before the subcommand
    /// (`CommonOptionOrder`), and without a subcommand the default one runs. The dump lists a
    /// `help` subcommand for every tool (fetchd's too); it takes subcommand names.
    static func problems(of arguments: [String], for tool: Command) -> [String] {
        var command = tool
        var rest = arguments
        let subcommands = (tool.subcommands ?? []).filter { $0.commandName != "help" }
        if !subcommands.isEmpty {
            let names = Set(subcommands.map(\.commandName) + ["help"])
            let fallback = tool.defaultSubcommand ?? defaultSubcommands[tool.commandName] ?? ""
            rest = CommonOptionOrder.reordered(arguments, commands: names, defaultCommand: fallback)
            if rest.first == "help" { return [] }
            if let first = rest.first, let named = subcommands.first(where: { $0.commandName == first }) {
                command = named
                rest.removeFirst()
            } else if let first = rest.first, !first.hasPrefix("-") {
                return ["\(first) is not a subcommand of \(tool.commandName)"]
            } else if let fallbackCommand = subcommands.first(where: { $0.commandName == fallback }) {
                command = fallbackCommand
            } else {
                return ["no subcommand named, and \(tool.commandName) has no default"]
            }
        }
        let known = Set(command.options).union(common)
        let valued = command.valuedOptions
        var problems: [String] = []
        var index = 0
        while index < rest.count {
            let argument = rest[index]
            index += 1
            if argument.hasPrefix("-") && argument.count > 1 {
                let name = String(argument.prefix { $0 != "=" })
                if !known.contains(name) {
                    problems.append("\(command.commandName) takes no option \(name)")
                } else if valued.contains(name) && !argument.contains("=") {
                    if index < rest.count { index += 1 } else { problems.append("\(name) lacks its value") }
                }
            } else if !command.takesPositionals {
                problems.append("\(command.commandName) takes no argument \(argument)")
            }
        }
        return problems
    }
}
