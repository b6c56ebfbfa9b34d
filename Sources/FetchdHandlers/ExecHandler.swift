import FetchdCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs a program as a fetch handler.
///
/// The program contract (documented in fetchd-handlers(7), EXEC HANDLERS):
/// - it writes its snapshot to the path in `FETCHD_OUTPUT`;
/// - it gets `FETCHD_HANDLER`, `FETCHD_TRIGGER`, `FETCHD_DEADLINE` (Unix time, seconds),
///   `FETCHD_PREVIOUS` (the latest snapshot's path, when there is one) and `FETCHD_PUSH_DATA`
///   (a push wake's JSON data, when it carried some);
/// - it reports by exit status: 0 is `newData`, 100 is `noData`, anything else is `failed`.
///
/// The program runs in a new session (so a process group of its own) with a clean
/// environment and stdin on /dev/null. At the deadline the whole group gets SIGTERM, and
/// SIGKILL after the grace period. When the program exits, anything it left behind in its
/// group is killed, so a grandchild holding stdout open cannot keep the fetch alive.
///
/// With `user`, the program runs as that account (its groups, `HOME`, `USER`, `LOGNAME`) and
/// writes to `context.userOutputPath`; fetchd checks that file and copies it to `outputPath`
/// (see `UserOutput`), never touching the user's file itself.
public struct ExecHandler: FetchHandler {
    /// The argv to run; the first element is a path or a name looked up in `PATH`.
    public let command: [String]
    /// Extra environment from the handler's config.
    public var environment: [String: String]
    /// Time between SIGTERM and SIGKILL at the deadline.
    public let killGrace: Duration
    /// The most stdout/stderr bytes kept for the failure reason (the tail is kept).
    public var outputTailBytes = 2048
    /// The account the program runs as; nil: fetchd's own.
    public var user: UserAccount?
    /// The largest output taken over from a program running as another user (`max_bytes`).
    public var maxBytes = Defaults.maxBytes
    /// Whether the program writes a snapshot: false for commands run after a fetch (a transfer's
    /// `on_complete`), which get no `FETCHD_OUTPUT` and succeed by exiting 0.
    public var writesSnapshot = true

    /// The environment every program starts from, whatever the daemon's own was.
    static let baseEnvironment = [
        "PATH": Defaults.programSearchPath,
        "LANG": "C.UTF-8",
    ]

    /// Creates an exec handler.
    public init(command: [String], environment: [String: String] = [:], killGrace: Duration) {
        self.command = command
        self.environment = environment
        self.killGrace = killGrace
    }

    /// Runs the program once and completes `context` from its exit status.
    public func performFetch(context: FetchContext) async {
        var variables = Self.baseEnvironment.merging(environment) { _, configured in configured }
        if writesSnapshot { variables["FETCHD_OUTPUT"] = context.userOutputPath ?? context.outputPath }
        variables["FETCHD_HANDLER"] = context.handlerName
        variables["FETCHD_TRIGGER"] = context.trigger.rawValue
        variables["FETCHD_DEADLINE"] = String(Int(context.wallDeadline.timeIntervalSince1970))
        if let previous = context.previousSnapshotPath { variables["FETCHD_PREVIOUS"] = previous }
        if let data = context.pushData { variables["FETCHD_PUSH_DATA"] = data }

        if let user {
            variables["HOME"] = user.home
            variables["USER"] = user.name
            variables["LOGNAME"] = user.name
        }
        guard let program = command.first, !program.isEmpty else {
            context.complete(.failed(reason: "the command is empty"))
            return
        }
        guard let path = Self.lookUp(program, in: variables["PATH"] ?? "") else {
            context.complete(.failed(reason: "cannot run \(program): no such program in PATH (\(variables["PATH"] ?? ""))"))
            return
        }
        // The spawn reports a failed execve too, but only where vfork shares the child's memory
        // (ThreadSanitizer turns vfork into fork; the program would then just "exit 127"): a
        // program that cannot be run at all is named here first.
        guard access(path, X_OK) == 0 else {
            context.complete(.failed(reason: "cannot run \(program): \(String(cString: strerror(errno)))"))
            return
        }
        let tail = OutputTail(limit: outputTailBytes)
        let run = ProgramRun(path: path, arguments: command, environment: variables, user: user, killGrace: killGrace)
        do {
            let ending = try await run.run(into: tail)
            let refusal = takeOutput(context)
            // Stopped at the deadline or at shutdown: the runner has already settled the result.
            guard !context.isExpired else { return }
            if let refusal, ending == .exited(0) {
                context.complete(.failed(reason: refusal))
                return
            }
            complete(context, ending: ending, output: tail.text)
        } catch {
            _ = takeOutput(context)
            guard !context.isExpired else { return }
            context.complete(.failed(reason: "cannot run \(program): \(error)"))
        }
    }

    /// Where `program` is: itself when it holds a slash, else the first executable file of that
    /// name in `searchPath`'s folders (the program's own PATH, as a shell would look).
    static func lookUp(_ program: String, in searchPath: String) -> String? {
        // A path is taken as it is: `performFetch` says what is wrong with it (missing, not executable).
        if program.contains("/") { return program }
        for folder in searchPath.split(separator: ":") where !folder.isEmpty {
            let candidate = "\(folder)/\(program)"
            var info = stat()
            if stat(candidate, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }

    /// For a program running as another user: copies what it wrote (`userOutputPath`) to
    /// `outputPath` once checked, reporting the copy's digest so it is not read again. Returns
    /// why the file was refused, if it was.
    private func takeOutput(_ context: FetchContext) -> String? {
        guard let written = context.userOutputPath, let user else { return nil }
        switch UserOutput.take(from: written, to: context.outputPath, user: user, maxBytes: maxBytes) {
        case .nothing: return nil
        case .copied(let digest):
            context.reportContentDigest(digest)
            return nil
        case .refused(let reason): return reason
        }
    }

    private func complete(_ context: FetchContext, ending: ProgramRun.Ending, output: String) {
        let detail = output.isEmpty ? "" : ": " + output
        switch ending {
        case .exited(0):
            if !writesSnapshot || FileManager.default.fileExists(atPath: context.outputPath) {
                context.complete(.newData())
            } else {
                context.complete(.failed(reason: "exited 0 (newData) but wrote nothing to FETCHD_OUTPUT"))
            }
        case .exited(Defaults.execNoDataExitStatus):
            context.complete(.noData())
        case .exited(let code):
            context.complete(.failed(reason: "exited with status \(code)\(detail)"))
        case .signalled(let signal):
            context.complete(.failed(reason: "killed by signal \(signal) (\(String(cString: strsignal(signal))))\(detail)"))
        case .lost:
            context.complete(.failed(reason: "its exit status was lost: another process reaped it (is SIGCHLD ignored?)\(detail)"))
        }
    }
}
