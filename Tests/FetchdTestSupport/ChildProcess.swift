import Foundation

/// Runs a program to completion from a test and hands back its exit status and its stdout and
/// stderr together.
public enum ChildProcess {
    /// Runs a program to completion and returns its exit status and combined output.
    public static func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: program)
        child.arguments = arguments
        let pipe = Pipe()
        child.standardOutput = pipe
        child.standardError = pipe
        try child.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        return (child.terminationStatus, output)
    }

    /// `run(_:_:)` without blocking a thread of the shared pool: waits for the program by polling.
    public static func runWithoutBlocking(_ program: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        let outputFile = NSTemporaryDirectory() + "/fetchd-run-\(UUID().uuidString).out"
        _ = FileManager.default.createFile(atPath: outputFile, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputFile) }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputFile))
        let child = Process()
        child.executableURL = URL(fileURLWithPath: program)
        child.arguments = arguments
        child.standardOutput = output
        child.standardError = output
        try child.run()
        try output.close()
        if await !waitUntil(timeoutSeconds: 300, { !child.isRunning }) { child.terminate() }
        child.waitUntilExit()
        return (child.terminationStatus, try String(contentsOfFile: outputFile, encoding: .utf8))
    }
}
