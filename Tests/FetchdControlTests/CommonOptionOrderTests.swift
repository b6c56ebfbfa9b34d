import FetchdControl
import Testing

/// `fetchctl --socket PATH status` reads as `fetchctl status --socket PATH`.
struct CommonOptionOrderTests {
    private let commands: Set<String> = ["status", "ping", "history", "check-config"]

    private func reorder(_ arguments: [String]) -> [String] {
        CommonOptionOrder.reordered(arguments, commands: commands, defaultCommand: "status")
    }

    @Test func leadingCommonOptionsFollowTheCommand() {
        #expect(reorder(["--socket", "/s", "ping"]) == ["ping", "--socket", "/s"])
        #expect(reorder(["--json", "--socket=/s", "history", "news", "--limit", "3"])
            == ["history", "--json", "--socket=/s", "news", "--limit", "3"])
        #expect(reorder(["--socket", "/s", "--json"]) == ["status", "--socket", "/s", "--json"], "no command: the default")
    }

    @Test func everythingElseIsLeftAsItIs() {
        #expect(reorder(["ping", "--socket", "/s"]) == ["ping", "--socket", "/s"])
        #expect(reorder([]) == [])
        #expect(reorder(["--help"]) == ["--help"])
        #expect(reorder(["--version"]) == ["--version"])
        // A value-taking option at the very end has no value: the parser says so, as before.
        #expect(reorder(["--socket"]) == ["--socket"])
        // Still refused by a command that does not take it (check-config talks to no daemon).
        #expect(reorder(["--json", "check-config", "f.toml"]) == ["check-config", "--json", "f.toml"])
        #expect(reorder(["--verbose", "ping"]) == ["--verbose", "ping"])
    }
}
