import Foundation

#if canImport(Glibc)
import Glibc
#endif

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

/// A failed `posix_spawnp`, with its error number.
public struct SpawnError: Error {
    /// The error posix_spawnp returned.
    public var code: Int32
}

/// Spawns `arguments` (looked up in PATH) with stdin, stdout and stderr on /dev/null; with
/// `ownProcessGroup`, the child leads a new process group (pgid == pid).
public func spawnProcess(_ arguments: [String], ownProcessGroup: Bool = false) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for fd in Int32(0)...2 {
        posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
    }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    if ownProcessGroup {
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
    }
    let argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
    guard rc == 0 else { throw SpawnError(code: rc) }
    return pid
}

/// Runs `body`, which blocks (a socket read, a child process), on a thread of its own and
/// awaits its result. On Swift's cooperative pool (two threads on a 2-core machine) such a call
/// would hold a thread that the server it waits for may need: tests running side by side then
/// stall each other until their timeouts.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
