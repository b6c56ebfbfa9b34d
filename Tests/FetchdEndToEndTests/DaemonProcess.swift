import FetchdControl
import FetchdTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real `fetchd` process on a temp configuration, plus a way to run `fetchctl` against it.
final class DaemonProcess {
    let directory: TemporaryDirectory
    private(set) var process = Process()
    private var logPipe = Pipe()
    /// What `logSoFar()` read of the log; the log returned at stop starts with it.
    private var logRead: [UInt8] = []
    var socketPath: String { directory.file("run/control.sock") }
    var cachePath: String { directory.file("cache") }

    /// Writes `fetchd.toml` (pointing every directory into the temp folder) and `handlers`
    /// as `handlers.d/test.toml`.
    init(handlers: String, heartbeat: String = "1s", extraMain: String = "") throws {
        directory = try TemporaryDirectory("fetchd-e2e")
        try TestConfig.write(in: directory, main: """
            heartbeat = "\(heartbeat)"
            kill_grace = "1s"
            \(extraMain)
            """, handlers: handlers)
    }

    var configPath: String { directory.file("etc/fetchd.toml") }

    /// Starts the daemon, with `environment` added to the test's, and waits until its control
    /// socket answers.
    /// `launcher`, when given, runs first and is handed fetchd's path and arguments (e.g.
    /// `unshare` and a shell that mounts something, then execs them).
    func start(arguments: [String] = [], environment: [String: String] = [:], launcher: [String] = []) async throws {
        let fetchd = [TestBinaries.path(of: "fetchd"), "--config", configPath] + arguments
        let command = launcher + fetchd
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardError = logPipe
        process.standardOutput = logPipe
        try process.run()
        let socket = socketPath
        let ready = await waitUntil(timeoutSeconds: 20) {
            (try? ControlClient(path: socket, timeoutSeconds: 2).send(ControlRequest(command: .ping)).ok) == true
        }
        if !ready { throw DaemonError.notReady(log: stopAndReadLog()) }
    }

    /// Stops the daemon (SIGTERM) and starts it again on the same files; returns what the first
    /// run logged.
    @discardableResult
    func restart(environment: [String: String] = [:]) async throws -> (status: Int32, log: String) {
        let stopped = stopAndReadLog()
        process = Process()
        logPipe = Pipe()
        try await start(environment: environment)
        return stopped
    }

    /// SIGKILLs the daemon (no chance to clean up) and starts it again on the same files; returns
    /// what the killed run logged. Waits by polling, blocking no thread of the shared pool.
    @discardableResult
    func killAndRestart() async throws -> String {
        kill(process.processIdentifier, SIGKILL)
        _ = await waitUntil(timeoutSeconds: 30) { !process.isRunning }
        let log = stopAndReadLog().log
        process = Process()
        logPipe = Pipe()
        try await start()
        return log
    }

    /// Sends SIGTERM and waits; returns the exit status and everything the daemon logged.
    @discardableResult
    func stopAndReadLog() -> (status: Int32, log: String) {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let log = String(decoding: takeLogRead() + logPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, log)
    }

    /// Everything the daemon logged so far, read without waiting (the pipe's flags are put back
    /// after), and kept: the log returned at stop still holds it.
    func logSoFar() -> String {
        let fd = logPipe.fileHandleForReading.fileDescriptor
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, flags) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count > 0 { logRead += buffer[..<count] } else if count < 0 && errno == EINTR { continue } else { break }
        }
        return String(decoding: logRead, as: UTF8.self)
    }

    /// What `logSoFar()` read, forgotten here: it heads the log of the run that stops.
    private func takeLogRead() -> [UInt8] {
        defer { logRead = [] }
        return logRead
    }

    /// `stopAndReadLog()` for tests that run beside timing-sensitive suites: waits for the exit
    /// by polling, so no thread of the shared pool (two on this machine) is blocked while the
    /// daemon shuts down.
    ///
    /// Once the daemon has exited, its log is read without waiting for the pipe's end of file:
    /// a process that inherited the pipe (a test's helper started meanwhile) would hold that back,
    /// and with it a thread of the shared pool (a push listener test beside it starved once).
    func stopWithoutBlocking() async -> (status: Int32, log: String) {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        _ = await waitUntil(timeoutSeconds: 60) { !process.isRunning }
        guard !process.isRunning else { return stopAndReadLog() }
        let fd = logPipe.fileHandleForReading.fileDescriptor
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var log = takeLogRead()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count > 0 { log += buffer[..<count] } else if count < 0 && errno == EINTR { continue } else { break }
        }
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: log, as: UTF8.self))
    }

    /// `fetchctl(_:)` without blocking a thread of the shared pool while it runs.
    func fetchctlWithoutBlocking(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await ChildProcess.runWithoutBlocking(TestBinaries.path(of: "fetchctl"), arguments + ["--socket", socketPath])
    }

    /// Runs `fetchctl` with the daemon's socket; returns exit status and stdout+stderr.
    func fetchctl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try ChildProcess.run(TestBinaries.path(of: "fetchctl"), arguments + ["--socket", socketPath])
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        directory.remove()
    }

    enum DaemonError: Error { case notReady(log: (status: Int32, log: String)) }
}
