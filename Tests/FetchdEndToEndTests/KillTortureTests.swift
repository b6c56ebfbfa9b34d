import Foundation
import Testing

/// The short version of `make torture`'s SIGKILL run (Tests/Torture/kill_torture.py): ten kills
/// of a busy daemon, each followed by the integrity, torn-snapshot and nothing-lost checks.
@Suite(.serialized)
struct KillTortureTests {
    @Test func tenKillsLoseNothingAndTearNothing() async throws {
        let run = try await TortureScript.run("kill_torture.py", ["--kills", "10"], timeoutSeconds: 300)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("SIGKILL torture: 10 kills"), "\(run.output)")
    }
}
