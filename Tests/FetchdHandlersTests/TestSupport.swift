import FetchdCore
import FetchdHandlers
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The parent of every suite that starts real processes or servers. `.serialized` applies to
/// everything nested in it, so timing-sensitive process tests never compete with each other.
@Suite(.serialized, .timeLimit(.minutes(3)))
enum ProcessTests {}

extension Duration {
    /// The duration in seconds, as a Double (for messages and wall-clock arithmetic).
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

extension FetchRunner.Outcome {
    /// The failure reason, when the handler completed with `failed`.
    var failureReason: String? {
        if case .failed(let reason, _) = completion { return reason }
        return nil
    }

    /// The details of whichever completion was accepted.
    var details: [String: String]? {
        switch completion {
        case .newData(_, let details)?, .noData(let details)?, .failed(_, let details)?: details
        case nil: nil
        }
    }
}

/// Builds a context whose monotonic and wall-clock deadlines are both `deadline` from now.
func makeContext(in directory: TemporaryDirectory, name: String = "test-handler", deadline: Duration,
                 trigger: FetchTrigger = .manual, previous: String? = nil) -> FetchContext {
    FetchContext(
        handlerName: name, trigger: trigger, outputPath: directory.file("output"),
        previousSnapshotPath: previous, deadline: ContinuousClock.now + deadline,
        wallDeadline: Date().addingTimeInterval(deadline.inSeconds))
}

/// Runs `handler` under `context` and measures how long the run took.
func timedRun(_ handler: any FetchHandler, context: FetchContext) async -> (FetchRunner.Outcome, Duration) {
    let clock = ContinuousClock()
    let start = clock.now
    let outcome = await FetchRunner().run(handler, context: context)
    return (outcome, clock.now - start)
}

/// The result of running a shell script through `ExecHandler`.
struct ScriptRun {
    /// What the runner reported.
    var outcome: FetchRunner.Outcome
    /// How long the run took.
    var elapsed: Duration
    /// The script's process group (its own pid; nil if it never started).
    var pgid: pid_t?
}

/// The environment variable naming the file a test script writes its pid (= pgid) to.
let pgidFileVariable = "TEST_PGID_FILE"

/// The argv that runs `script` with `/bin/sh -c`, recording `$$` first.
func shellCommand(_ script: String) -> [String] {
    ["/bin/sh", "-c", "echo $$ > \"$\(pgidFileVariable)\"; " + script]
}

/// Runs `script` as an exec handler in `directory` and returns the outcome, time and pgid.
func runScript(_ script: String, in directory: TemporaryDirectory, deadline: Duration = .seconds(2),
               killGrace: Duration = .seconds(1), environment: [String: String] = [:],
               previous: String? = nil) async -> ScriptRun {
    ProcessGroups.becomeSubreaper()
    var variables = environment
    variables[pgidFileVariable] = directory.file("pgid")
    let handler = ExecHandler(command: shellCommand(script), environment: variables, killGrace: killGrace)
    let context = makeContext(in: directory, deadline: deadline, previous: previous)
    let (outcome, elapsed) = await timedRun(handler, context: context)
    return ScriptRun(outcome: outcome, elapsed: elapsed, pgid: readPID(directory.file("pgid")))
}

/// Reads a pid written by `echo $$ > file`.
func readPID(_ path: String) -> pid_t? {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
}

/// Process-group checks.
///
/// The test process makes itself a child subreaper, so processes orphaned by a test script
/// are reparented to it rather than to PID 1 (which, in some containers and VMs, reaps only
/// every few seconds). Their zombies would otherwise keep the group visible to `kill(-pgid, 0)`
/// although nothing is running. Only zombies of the group under test are reaped
/// (`waitpid(-pgid)`), so no other child's status is ever taken.
enum ProcessGroups {
    private static let subreaper: Bool = {
        typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prctl") else { return false }
        let prctl = unsafeBitCast(symbol, to: Prctl.self)
        return prctl(36 /* PR_SET_CHILD_SUBREAPER */, 1, 0, 0, 0) == 0
    }()

    /// Makes this process a child subreaper (once; later calls do nothing).
    static func becomeSubreaper() { _ = subreaper }

    /// True once no process has `pgid` as its group (reaping the group's orphaned zombies first).
    static func isGone(_ pgid: pid_t) -> Bool {
        while waitpid(-pgid, nil, WNOHANG) > 0 {}
        return kill(-pgid, 0) == -1 && errno == ESRCH
    }

    /// The group's members as `pid state ppid comm`, for failure messages.
    static func describe(_ pgid: pid_t) -> String {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        let members = entries.compactMap { entry -> String? in
            guard Int32(entry) != nil,
                  let stat = ProcFile.read("/proc/\(entry)/stat"),
                  let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, pid_t(fields[2]) == pgid else { return nil }
            let comm = stat[stat.index(after: stat.firstIndex(of: "(")!)..<close]
            return "\(entry) \(fields[0]) ppid=\(fields[1]) \(comm)"
        }
        return members.isEmpty ? "(none visible in /proc)" : members.joined(separator: "; ")
    }
}

/// Expects that no process is left in group `pgid`, allowing 200 ms for the kernel to finish.
func expectGroupGone(_ pgid: pid_t?, sourceLocation: SourceLocation = #_sourceLocation) async {
    guard let pgid else {
        Issue.record("the script never recorded its pid", sourceLocation: sourceLocation)
        return
    }
    let limit = ContinuousClock.now + .milliseconds(200)
    while !ProcessGroups.isGone(pgid) {
        if ContinuousClock.now >= limit {
            Issue.record("process group \(pgid) still has members: \(ProcessGroups.describe(pgid))",
                         sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(for: .milliseconds(10))
    }
}

/// Expects `elapsed` to lie in `range`, with a readable message.
func expectElapsed(_ elapsed: Duration, in range: ClosedRange<Duration>,
                   sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(range.contains(elapsed),
            "elapsed \(elapsed.inSeconds) s, expected \(range.lowerBound.inSeconds)...\(range.upperBound.inSeconds) s",
            sourceLocation: sourceLocation)
}

/// The peak resident set size of this process, in KiB (`VmHWM`).
func peakResidentKiB() -> Int? {
    guard let status = ProcFile.read("/proc/self/status") else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
    }
    return nil
}

/// Runs `handler` and cancels the run from outside after `delay` (as daemon shutdown does).
func runCancelled(_ handler: any FetchHandler, context: FetchContext, after delay: Duration) async -> FetchRunner.Outcome? {
    await withTaskGroup(of: FetchRunner.Outcome?.self) { group in
        group.addTask { await FetchRunner().run(handler, context: context) }
        try? await Task.sleep(for: delay)
        group.cancelAll()
        var result: FetchRunner.Outcome?
        for await value in group where value != nil { result = value }
        return result
    }
}
