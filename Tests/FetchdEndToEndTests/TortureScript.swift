import FetchdTestSupport
import Foundation
import Testing

/// Runs one of `make torture`'s scripts (Tests/Torture/*.py) against the built binaries, for the
/// short versions `make test` runs. The scripts exit 1 with a `VIOLATION:` line at the first fault.
enum TortureScript {
    /// Runs `Tests/Torture/<name>` with `--bin-dir` and `arguments`; returns its exit status and
    /// everything it printed. Polled, not `waitUntilExit()`: no thread of the shared pool is
    /// blocked for the run.
    static func run(_ name: String, _ arguments: [String], timeoutSeconds: Double) async throws -> (status: Int32, output: String) {
        let script = TestBinaries.sourceTree + "/Tests/Torture/\(name)"
        let output = try TemporaryDirectory("torture-output")
        defer { output.remove() }
        let log = output.file("log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        child.arguments = ["python3", script, "--bin-dir", TestBinaries.directory] + arguments
        child.standardOutput = handle
        child.standardError = handle
        try child.run()
        try handle.close()
        let finished = await waitUntil(timeoutSeconds: timeoutSeconds) { !child.isRunning }
        if !finished { child.terminate() }
        child.waitUntilExit()
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(finished, "\(name) did not finish within \(timeoutSeconds) s: \(text)")
        return (child.terminationStatus, text)
    }
}
