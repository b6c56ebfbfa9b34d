import FetchdTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, a clean signal mask, default signal handlers and
/// only the file descriptors given to it.
///
/// Foundation's `Process` passes on the spawning thread's signal mask; Swift concurrency's threads
/// block SIGCHLD, so a `/bin/sh` that waits, or `timeout`, started from a test would hang forever.
final class HostProcess {
    /// The child's process ID.
    let pid: pid_t
    private var status: Int32?

    /// Starts `path` with `arguments`; `stdin`, `stdout`, `stderr` are descriptors to give it
    /// (nil: /dev/null). Every other descriptor is closed in the child.
    init(_ path: String, _ arguments: [String], environment: [String: String] = HostProcess.environment,
         stdin: Int32? = nil, stdout: Int32? = nil, stderr: Int32? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (source, target) in [(stdin, Int32(0)), (stdout, 1), (stderr, 2)] {
            if let source {
                posix_spawn_file_actions_adddup2(&actions, source, target)
            } else {
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            }
        }
        if let closeFrom = Self.closeFrom { _ = closeFrom(&actions, 3) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL) }
        pid = child
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), not exported to Swift.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
        dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: (@convention(c) (
            UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self) }

    /// The test process's environment without what systemd gave it, if it runs under systemd
    /// (a namespaced systemd or command must not talk to the host's manager), and without pagers or colours.
    static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
                    "INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "MANAGERPID"] {
            environment[key] = nil
        }
        environment["SYSTEMD_PAGER"] = ""
        environment["SYSTEMD_COLORS"] = "0"
        return environment
    }

    /// Whether the child still runs (reaps it once it has exited).
    var isRunning: Bool {
        guard status == nil else { return false }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        if result == 0 { return true }
        status = result == pid ? Self.decode(raw) : -1
        return false
    }

    /// Waits until the child exits or `timeoutSeconds` pass, then SIGKILLs it; returns the exit
    /// status, 128 + signal number when a signal ended it. Polls with `Task.sleep`, so waiting
    /// takes no thread from Swift concurrency's small pool (other tests' timing depends on it).
    @discardableResult
    func wait(timeoutSeconds: Double = .infinity) async -> Int32 {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        return killAfterDeadline()
    }

    /// `wait(timeoutSeconds:)` that blocks the calling thread: only for `deinit` and `defer`.
    @discardableResult
    func waitBlocking(timeoutSeconds: Double = .infinity) -> Int32 {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while isRunning, Date() < deadline { usleep(5_000) }
        return killAfterDeadline()
    }

    private func killAfterDeadline() -> Int32 {
        if isRunning {
            // Descendants first (nsenter's child in the namespace, say), and a moment for the child to
            // reap them: orphans of a process outside a PID namespace go to the host's init, which
            // may never reap them (a zombie left visible in the namespace).
            let descendants = Self.descendants(of: pid)
            descendants.reversed().forEach { kill($0, SIGKILL) }
            let deadline = Date().addingTimeInterval(descendants.isEmpty ? 0 : 1)
            while isRunning, Date() < deadline { usleep(2_000) }
        }
        if isRunning {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            status = waitpid(pid, &raw, 0) == pid ? Self.decode(raw) : -1
        }
        return status ?? -1
    }

    private static func decode(_ raw: Int32) -> Int32 {
        raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
    }

    /// Runs `path` to completion (killed after `timeoutSeconds`) and collects its output through
    /// unlinked temp files, which nothing else can hold open or delete.
    static func run(_ path: String, _ arguments: [String], stdin: String? = nil,
                    timeoutSeconds: Double) async throws -> SystemdNamespace.Output {
        let (child, out, err) = try start(path, arguments, stdin: stdin)
        let status = await child.wait(timeoutSeconds: timeoutSeconds)
        return SystemdNamespace.Output(status: status, stdout: readAll(out), stderr: readAll(err))
    }

    /// `run` that blocks the calling thread: only for `deinit` and `defer`.
    static func runBlocking(_ path: String, _ arguments: [String], timeoutSeconds: Double) throws -> SystemdNamespace.Output {
        let (child, out, err) = try start(path, arguments, stdin: nil)
        let status = child.waitBlocking(timeoutSeconds: timeoutSeconds)
        return SystemdNamespace.Output(status: status, stdout: readAll(out), stderr: readAll(err))
    }

    private static func start(_ path: String, _ arguments: [String],
                              stdin: String?) throws -> (HostProcess, FileHandle, FileHandle) {
        let out = try scratchFile(), err = try scratchFile()
        let input = try stdin.map { text -> FileHandle in
            let file = try scratchFile()
            file.write(Data(text.utf8))
            lseek(file.fileDescriptor, 0, SEEK_SET)
            return file
        }
        let child = try HostProcess(path, arguments, stdin: input?.fileDescriptor,
                                    stdout: out.fileDescriptor, stderr: err.fileDescriptor)
        return (child, out, err)
    }

    /// An open, already unlinked, close-on-exec temp file.
    static func scratchFile() throws -> FileHandle {
        var template = Array((NSTemporaryDirectory() + "/fetchd-sd-io-XXXXXX").utf8CString)
        let descriptor = mkstemp(&template)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        unlink(template)
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    private static func readAll(_ file: FileHandle) -> String {
        lseek(file.fileDescriptor, 0, SEEK_SET)
        return String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
    }

    /// The children of `pid` (from `/proc/PID/task/PID/children`).
    static func children(of pid: pid_t) -> [pid_t] {
        let text = ProcFile.read("/proc/\(pid)/task/\(pid)/children") ?? ""
        return text.split(separator: " ").compactMap { pid_t($0) }
    }

    /// The children of `pid`, their children, and so on.
    static func descendants(of pid: pid_t) -> [pid_t] {
        children(of: pid).flatMap { [$0] + descendants(of: $0) }
    }

    /// The full path of `name` in the usual binary folders, or nil.
    static func tool(_ name: String) -> String? {
        ["/usr/bin", "/bin", "/usr/sbin", "/sbin"].map { $0 + "/" + name }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Mount points of the cgroup2 tree and the v1 `name=systemd` tree, the ones systemd tracks units in.
    static func systemdCgroupMounts() -> [String] {
        cgroupMounts().filter { $0.type == "cgroup2" || $0.options.contains("name=systemd") }.map(\.path)
    }

    /// Mount points of the cgroup v1 controller trees (cpu, memory, pids, ...).
    static func otherCgroupMounts() -> [String] {
        cgroupMounts().filter { $0.type == "cgroup" && !$0.options.contains("name=systemd") }.map(\.path)
    }

    private static func cgroupMounts() -> [(path: String, type: String, options: [String])] {
        let text = ProcFile.read("/proc/self/mountinfo") ?? ""
        var seen = Set<String>()
        return text.split(separator: "\n").compactMap { line in
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2 else { return nil }
            let left = halves[0].split(separator: " "), right = halves[1].split(separator: " ")
            guard left.count >= 5, right.count >= 3, right[0] == "cgroup" || right[0] == "cgroup2" else { return nil }
            let path = String(left[4])
            guard path.hasPrefix("/sys/fs/cgroup"), seen.insert(path).inserted else { return nil }
            return (path, String(right[0]), right[2].split(separator: ",").map(String.init))
        }
    }
}
