import FetchdTestSupport
import Foundation
import Testing

/// The short version of `make torture`'s SIGKILL run (Tests/Torture/kill_torture.py): ten kills
/// of a busy daemon, each followed by the integrity, torn-snapshot and nothing-lost checks.
@Suite(.serialized)
struct KillTortureTests {
    @Test func tenKillsLoseNothingAndTearNothing() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Torture/kill_torture.py").path
        let output = try TemporaryDirectory("kill-torture-output")
        defer { output.remove() }
        let log = output.file("log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        child.arguments = ["python3", script, "--bin-dir", TestBinaries.directory, "--kills", "10"]
        child.standardOutput = handle
        child.standardError = handle
        try child.run()
        try handle.close()
        // Polled, not waitUntilExit(): no thread of the shared pool is blocked for the run.
        #expect(await waitUntil(timeoutSeconds: 300) { !child.isRunning })
        child.waitUntilExit()
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(child.terminationStatus == 0, "\(text)")
        #expect(text.contains("SIGKILL torture: 10 kills"), "\(text)")
    }
}
