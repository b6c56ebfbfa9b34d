import CPosixShim
import FetchdClock
import FetchdCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One run of an exec handler's program: started by `fetchd_spawn` (see CPosixShim for why not a
/// library), its output drained into an `OutputTail`, its exit awaited, its process group ended
/// when the program exits or the run is cancelled, and its control group (`ProgramCgroup`, where
/// fetchd may make one) ended with it, so nothing it started outlives it, whatever its session.
///
/// What it needs from fetchd's descriptors is one pipe, made before anything else and refused
/// cleanly when there is no room; the spawn itself opens none. So a file-descriptor limit makes a
/// fetch fail with a reason, never fetchd stop, and the exit is watched by polling `waitid`, so
/// no descriptor is needed to learn of it either.
struct ProgramRun {
    /// How a program ended.
    enum Ending: Equatable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)
        /// Its exit status could not be collected (someone else reaped it: SIGCHLD ignored).
        case lost
    }

    /// Why a program could not be started, in words for a failure reason.
    struct StartFailure: Error, CustomStringConvertible {
        /// E.g. `No such file or directory`.
        let description: String
    }

    /// The program's path (looked up in PATH already).
    let path: String
    /// Its argv, `argv[0]` included.
    let arguments: [String]
    /// Its whole environment.
    let environment: [String: String]
    /// Who it runs as; nil: fetchd's user.
    let user: UserAccount?
    /// How long after SIGTERM (at cancellation) the group gets SIGKILL.
    let killGrace: Duration

    /// How often the output is read while the program is quiet.
    static let readInterval: Duration = .milliseconds(10)
    /// The most read in one go before other tasks get a turn (a program printing without end
    /// must not hold one of the pool's threads).
    static let readBatchBytes = 1 << 20

    /// Runs the program to its end. Cancelling the task (the deadline, a shutdown) sends the group
    /// SIGTERM, then SIGKILL after `killGrace`, and still waits for the program to end.
    func run(into tail: OutputTail) async throws(StartFailure) -> Ending {
        var ends: [Int32] = [0, 0]
        guard fetchd_pipe_cloexec(&ends) == 0 else { throw StartFailure(description: Self.errnoText(errno)) }
        let cgroup = ProgramCgroup.make()
        var failedStep: Int32 = 0
        let pid = spawn(output: ends[1], cgroup: cgroup, failedStep: &failedStep)
        close(ends[1])
        guard pid > 0 else {
            close(ends[0])
            await cgroup?.end()
            let why = Self.errnoText(-pid)
            if let cgroup, failedStep == Int32(FETCHD_SPAWN_STEP_CGROUP) {
                throw StartFailure(description: "cannot join its control group \(cgroup.path): \(why)")
            }
            throw StartFailure(description: why)
        }
        let readEnd = ends[0]
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        let group = ProcessGroup(leader: pid)
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await Self.drain(readEnd, into: tail, until: group) }
                tasks.addTask {
                    await ProcessGroupReaper.waitForExit(of: pid)
                    // The program is gone; whatever it left in its groups must not outlive it.
                    group.signal(SIGKILL)
                    await cgroup?.end()
                    group.markExited()
                }
            }
        } onCancel: {
            group.signal(SIGTERM)
            _ = DeadlineTimer.shared.schedule(at: .now + killGrace) { group.signal(SIGKILL) }
        }
        close(readEnd)
        return group.reap()
    }

    /// Starts the child, in `cgroup` when there is one; its pid, or -errno and the failed step.
    private func spawn(output: Int32, cgroup: ProgramCgroup?, failedStep: inout Int32) -> pid_t {
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        let procs = cgroup.map { strdup($0.procsPath) }
        defer { (argv + envp + [procs ?? nil]).forEach { free($0) } }
        let groups = user?.groups ?? []
        return groups.withUnsafeBufferPointer { groupList in
            fetchd_spawn(path, argv, envp, output, DescriptorLimit.forPrograms, procs ?? nil, user == nil ? 0 : 1,
                         user?.uid ?? 0, user?.gid ?? 0, groupList.baseAddress, Int32(groupList.count), &failedStep)
        }
    }

    /// Reads `fd` into `tail` until its end, or until the program has exited (a child that left
    /// the group may hold the pipe open for ever).
    private static func drain(_ fd: Int32, into tail: OutputTail, until group: ProcessGroup) async {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let exitedBefore = group.hasExited
            var batch = 0
            var ended = false
            while batch < readBatchBytes {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    buffer.withUnsafeBytes { tail.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                    batch += count
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    ended = true
                    break
                } else if errno == EAGAIN {
                    break
                }
            }
            // Exited before this read began: all it wrote has been read.
            if ended || exitedBefore { return }
            await ProcessGroupReaper.sleepIgnoringCancellation(batch >= readBatchBytes ? .milliseconds(1) : readInterval)
        }
    }

    /// `strerror`, and for a descriptor shortage what it means and the limit.
    static func errnoText(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        guard code == EMFILE || code == ENFILE else { return text }
        var limit = rlimit()
        let soft = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 ? " (RLIMIT_NOFILE \(limit.rlim_cur))" : ""
        return code == EMFILE ? "\(text) (EMFILE): fetchd is at its file-descriptor limit\(soft)"
            : "\(text) (ENFILE): the system is out of file descriptors"
    }
}

/// A started program's process group, signalled only while its leader is not yet reaped: once
/// reaped, its number may be another process's.
private final class ProcessGroup: Sendable {
    private struct State {
        var exited = false
        var reaped = false
    }
    private let leader: pid_t
    private let state = Mutex(State())

    init(leader: pid_t) { self.leader = leader }

    var hasExited: Bool { state.withLock { $0.exited } }

    func markExited() { state.withLock { $0.exited = true } }

    /// Sends `signal` to the whole group, unless the leader has been reaped.
    func signal(_ signal: Int32) {
        state.withLock { if !$0.reaped { _ = kill(-leader, signal) } }
    }

    /// Reaps the leader (it has exited) and says how it ended.
    func reap() -> ProgramRun.Ending {
        state.withLock { state in
            var status: Int32 = 0
            var reaped = waitpid(leader, &status, 0)
            while reaped < 0 && errno == EINTR { reaped = waitpid(leader, &status, 0) }
            state.reaped = true
            guard reaped == leader else { return .lost }
            // Glibc's WIFEXITED/WTERMSIG macros, by hand: Swift does not import them.
            let signal = status & 0x7f
            return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
        }
    }
}
