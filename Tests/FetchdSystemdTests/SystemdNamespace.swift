import FetchdTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real systemd running as PID 1 of fresh PID + mount namespaces, for end-to-end tests that
/// need `systemctl`, timers, `systemd-run` and `journalctl`.
///
/// Isolation from the host (which shares the kernel, the filesystems, `/tmp` and the cgroup trees):
/// - systemd sees only the units in `/etc/systemd/system` and `/run/systemd/system`, both private
///   tmpfs mounts, through `SYSTEMD_UNIT_PATH`; generators are switched off. Only the journal (and
///   D-Bus, see `dbus`) are copied in, with stub targets. Without this, the first unit with default
///   dependencies pulls in `sysinit.target`, whose `systemd-tmpfiles-setup.service` wipes the
///   host's `/tmp`, `systemd-sysctl` sets host kernel variables, and so on.
/// - systemd runs in its own cgroup (`fetchd-sd-*` in the `name=systemd` and cgroup2 trees), so
///   namespaces running in parallel never share unit cgroups; `shutdown()` removes it.
/// - `/run`, `/var/tmp`, `/var/lib/systemd`, `/var/log/journal` and `/var/{lib,cache,log}/private`
///   are private tmpfs mounts; each of `privateDirectories` is a bind mount of a folder of
///   `directory`, so tests can read what services wrote there from the host.
/// - `/etc` is a private copy; with `Root.overlays`, `/usr`, `/etc` and `/var` are overlays with
///   tmpfs upper layers instead, for tests that install a package with dpkg and apt.
/// - The host's `/tmp` stays visible (tests share files through it). `shutdown()` stops every unit
///   before the SIGKILL so that `PrivateTmp=yes` folders (`/tmp/systemd-private-*`) are removed.
/// - systemd's own log goes to the namespace's journal (`journalctl _PID=1`), never to the host.
final class SystemdNamespace {
    /// The output of a command run inside the namespace.
    struct Output: CustomStringConvertible {
        /// The exit status (128 + signal number when killed by a signal).
        let status: Int32
        /// Everything written to standard output.
        let stdout: String
        /// Everything written to standard error.
        let stderr: String
        /// Status, stdout and stderr, for failure messages.
        var description: String { "status \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
    }

    /// Why the harness fails to start or a command inside it fails.
    enum Failure: Error, CustomStringConvertible {
        case bootFailed(String)
        case commandFailed([String], Output)
        /// A readable account of the failure.
        var description: String {
            switch self {
            case .bootFailed(let text): "systemd namespace did not boot: \(text)"
            case .commandFailed(let argv, let output): "\(argv.joined(separator: " ")) failed: \(output)"
            }
        }
    }

    /// Folders mounted privately (from folders of `directory`) unless the caller names others.
    static let defaultPrivateDirectories = ["/etc/fetchd", "/var/lib/fetchd", "/var/cache/fetchd", "/var/log/fetchd"]
    /// Where systemd's binary lives.
    static let systemdBinary = "/lib/systemd/systemd"
    /// Units copied from the host: the journal, and D-Bus when `dbus` is on.
    static let journalUnits = ["systemd-journald.service", "systemd-journald.socket",
                               "systemd-journald-dev-log.socket", "systemd-journald-audit.socket"]

    /// Why the harness cannot run here, or nil when it can. Use as
    /// `.enabled(if: SystemdNamespace.unavailableReason == nil, ...)`.
    static var unavailableReason: String? {
        #if os(Linux)
        if geteuid() != 0 { return "needs root (to create PID and mount namespaces)" }
        for name in ["unshare", "nsenter", "nice", "systemctl", "systemd-run", "journalctl"] where HostProcess.tool(name) == nil {
            return "\(name) is not installed"
        }
        if !FileManager.default.isExecutableFile(atPath: systemdBinary) { return "\(systemdBinary) does not exist" }
        let cgroups = HostProcess.systemdCgroupMounts()
        if cgroups.isEmpty { return "no cgroup2 or name=systemd cgroup hierarchy is mounted" }
        if let readOnly = cgroups.first(where: { access($0, W_OK) != 0 }) { return "\(readOnly) is not writable" }
        return nil
        #else
        return "systemd namespaces need Linux"
        #endif
    }

    /// The host folder holding boot.sh and the private directories' contents (removed by `shutdown()`).
    let directory: TemporaryDirectory
    /// The namespace's PID 1 (systemd) as the host sees it.
    private(set) var systemdPID: pid_t = 0
    /// Seconds from starting `unshare` until `systemctl is-system-running` said running.
    private(set) var bootSeconds: Double = 0
    /// The PID namespace's identity (`pid:[inode]`, the link `/proc/PID/ns/pid`).
    private(set) var pidNamespace = ""
    /// Whether a system D-Bus runs inside (needed by `systemd-run --wait/--pipe` and bus clients).
    let dbus: Bool
    /// The cgroup (relative to each hierarchy's root) that systemd runs in.
    let cgroupName: String
    /// The folders bind-mounted from `directory` inside (see `hostDirectory(for:)`).
    let privateDirectories: [String]
    /// The nice value of everything in the namespace.
    let niceness: Int
    /// How the host's system folders are seen inside.
    let root: Root
    /// The addresses (`11.0.0.7/32`) on the `lo` of a network namespace of its own, seen
    /// by the units (not by `run`, which enters only the PID and mount namespaces); nil: the host's.
    let network: [String]?
    /// `sh` holding `unshare`: as soon as its stdin, the pipe whose write end is `lifeline`, reaches
    /// end of file — on `shutdown()`, or when the test process dies, however it dies — it SIGKILLs
    /// PID 1, then `unshare` (whose `--kill-child` SIGKILLs PID 1 too), and reaps them.
    private var launcher: HostProcess?
    private var lifeline: Int32 = -1
    /// What boot.sh and systemd wrote to stdout and stderr (an unlinked file).
    private var bootLogFile: FileHandle?
    private var isShutDown = false

    /// Boots systemd and waits (at most `timeoutSeconds`) until it is running or degraded.
    /// Everything in the namespace runs at `niceness` (10 by default), so that a busy systemd
    /// does not starve the timing-sensitive tests that `swift test` runs alongside.
    init(privateDirectories: [String] = defaultPrivateDirectories, dbus: Bool = true, niceness: Int = 10,
         root: Root = .privateCopyOfEtc, network: [String]? = nil, timeoutSeconds: Double = 30) async throws {
        if let reason = Self.unavailableReason { throw Failure.bootFailed(reason) }
        let id = UUID().uuidString.prefix(8).lowercased()
        cgroupName = "fetchd-sd-" + id
        directory = try TemporaryDirectory("fetchd-systemd-" + id)
        self.privateDirectories = privateDirectories
        self.niceness = niceness
        self.root = root
        self.network = network
        self.dbus = dbus && FileManager.default.fileExists(atPath: "/lib/systemd/system/dbus.socket")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon")
        do { try await boot(timeoutSeconds: timeoutSeconds) } catch { shutdown(); throw error }
    }

    deinit { shutdown() }

    /// The host folder bind-mounted over `path` (one of `privateDirectories`) inside.
    func hostDirectory(for path: String) -> String {
        directory.file("private" + path.replacingOccurrences(of: "/", with: "_"))
    }

    /// The host's way into `path` inside the namespace (through `/proc/PID/root`).
    func hostPath(_ path: String) -> String { "/proc/\(systemdPID)/root" + path }

    /// Runs `argv` inside the namespace (`nsenter -t PID -p -m`, at `niceness`), killing it after
    /// `timeoutSeconds`. No wrapper process inside carries `argv` in its command line, so
    /// `pgrep -f` in the namespace sees only what the command itself started.
    /// Refuses once PID 1 is gone: its PID could then belong to a host process, and `nsenter`
    /// would run the command in the host's namespaces.
    @discardableResult
    func run(_ argv: [String], stdin: String? = nil, timeoutSeconds: Double = 30) async throws -> Output {
        guard isRunning else { throw Failure.bootFailed("PID 1 of the namespace is gone; not running \(argv)") }
        return try await HostProcess.run(HostProcess.tool("nice") ?? "/usr/bin/nice", nsenterArguments(argv),
                                         stdin: stdin, timeoutSeconds: timeoutSeconds)
    }

    private func nsenterArguments(_ argv: [String]) -> [String] {
        ["-n", "\(niceness)", HostProcess.tool("nsenter") ?? "/usr/bin/nsenter", "-t", "\(systemdPID)", "-p", "-m", "--"]
            + argv
    }

    /// Like `run`, but throws unless the command exits with status 0.
    @discardableResult
    func check(_ argv: [String], stdin: String? = nil, timeoutSeconds: Double = 30) async throws -> Output {
        let output = try await run(argv, stdin: stdin, timeoutSeconds: timeoutSeconds)
        if output.status != 0 { throw Failure.commandFailed(argv, output) }
        return output
    }

    /// Writes `contents` to `path` inside the namespace, creating folders, with `mode`.
    func writeFile(_ path: String, _ contents: String, mode: Int = 0o644) throws {
        let target = hostPath(path)
        try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try contents.write(toFile: target, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: target)
    }

    /// Bind-mounts the host folder `hostPath` at `path` inside (read-only unless `readOnly` is
    /// false), e.g. to run built binaries without copying them.
    func bindMount(_ hostPath: String, at path: String, readOnly: Bool = true) async throws {
        try await check(["sh", "-c", "mkdir -p \"$2\" && mount --bind \"$1\" \"$2\""
            + (readOnly ? " && mount -o remount,bind,ro \"$2\"" : ""), "sh", hostPath, path])
    }

    /// Writes a unit file to `/run/systemd/system/NAME` inside and runs `systemctl daemon-reload`.
    func installUnit(name: String, contents: String) async throws {
        try writeFile("/run/systemd/system/" + name, contents)
        try await check(["systemctl", "daemon-reload"])
    }

    /// `systemctl show -p PROPERTY --value UNIT`, trimmed.
    func property(_ property: String, of unit: String) async throws -> String {
        try await check(["systemctl", "show", "-p", property, "--value", unit]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The journal entries of `unit` (`journalctl -u UNIT -o json`), every field as a string
    /// (byte-array fields decoded as UTF-8).
    func journal(unit: String, extraArgs: [String] = []) async throws -> [[String: String]] {
        let output = try await check(["journalctl", "-u", unit, "-o", "json", "--no-pager", "-q"] + extraArgs)
        return output.stdout.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return nil
            }
            return object.compactMapValues { value in
                if let text = value as? String { return text }
                if let texts = value as? [String] { return texts.joined(separator: "\n") }  // a repeated field
                if let bytes = value as? [NSNumber] { return String(decoding: bytes.map { $0.uint8Value }, as: UTF8.self) }
                return value as? NSNumber == nil ? nil : "\(value)"
            }
        }
    }

    /// The MESSAGE fields of `unit`'s journal: systemd's own lines about the unit ("Starting ...",
    /// "Deactivated successfully") too, unless `outputOnly`, which keeps what the unit's processes
    /// wrote to stdout/stderr or sent to the journal themselves.
    func journalMessages(unit: String, outputOnly: Bool = false) async throws -> [String] {
        try await journal(unit: unit).filter { !outputOnly || $0["_PID"] != "1" }.compactMap { $0["MESSAGE"] }
    }

    /// Closes the write end of the launcher's stdin, as the kernel does when the test process dies:
    /// the launcher then kills the namespace on its own. `shutdown()` still cleans up after it.
    func closeLifeline() {
        if lifeline >= 0 { close(lifeline) }
        lifeline = -1
    }

    /// Stops every unit (best effort, ≤ 5 s, so `PrivateTmp` folders go), SIGKILLs PID 1 — which
    /// kills everything in the PID namespace — then removes the cgroups and the temp folder.
    /// Safe to call more than once. It blocks the calling thread (usually for a few tens of
    /// milliseconds), so that it can run from `defer` and `deinit`.
    func shutdown() {
        guard !isShutDown else { return }
        isShutDown = true
        if isRunning {
            _ = try? HostProcess.runBlocking(HostProcess.tool("nice") ?? "/usr/bin/nice", nsenterArguments(
                ["systemctl", "stop", "--job-mode=replace-irreversibly", "*.timer", "*.service"]), timeoutSeconds: 5)
            kill(systemdPID, SIGKILL)
            // unshare reaps PID 1 once the kernel has killed the rest of the namespace.
            let deadline = Date().addingTimeInterval(5)
            while isRunning, Date() < deadline { usleep(5_000) }
        }
        closeLifeline()
        launcher?.waitBlocking(timeoutSeconds: 10)
        removeCgroups()
        directory.remove()
    }

    /// Whether the namespace's PID 1 is still alive (checked by namespace identity, not just PID).
    var isRunning: Bool {
        guard systemdPID > 0, !pidNamespace.isEmpty, Self.pidNamespace(of: systemdPID) == pidNamespace else { return false }
        let stat = ProcFile.read("/proc/\(systemdPID)/stat") ?? ""
        return !stat.contains(") Z ") && !stat.contains(") X ")
    }

    // MARK: - Booting

    private func boot(timeoutSeconds: Double) async throws {
        let started = Date()
        Self.removeLeftovers()
        let script = try directory.write(bootScript(), to: "boot.sh")
        let log = try HostProcess.scratchFile()
        bootLogFile = log
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw Failure.bootFailed("pipe: errno \(errno)") }
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        lifeline = ends[1]
        defer { close(ends[0]) }
        let unshare = HostProcess.tool("unshare") ?? "/usr/bin/unshare"
        let launcher = try HostProcess("/bin/sh", ["-c", Self.launcherScript, "sh", unshare, script, "\(niceness)", network == nil ? "" : "--net"],
            stdin: ends[0], stdout: log.fileDescriptor, stderr: log.fileDescriptor)
        self.launcher = launcher
        let found = await eventually(timeoutSeconds: 10) {
            let unsharePID = HostProcess.children(of: launcher.pid).first ?? 0
            let child = unsharePID > 0 ? HostProcess.children(of: unsharePID).first ?? 0 : 0
            // boot.sh becomes systemd by exec: wait for the exec so the namespace is complete.
            let name = ProcFile.read("/proc/\(child)/comm") ?? ""
            systemdPID = name == "systemd\n" ? child : 0
            let unshareExited = unsharePID > 0 && child == 0
                && (ProcFile.read("/proc/\(unsharePID)/stat")?.contains(") Z ") ?? true)
            return systemdPID > 0 || unshareExited || !launcher.isRunning
        }
        guard found, systemdPID > 0, let namespace = Self.pidNamespace(of: systemdPID) else {
            throw Failure.bootFailed("no child of unshare; " + bootLog())
        }
        pidNamespace = namespace
        var state = ""
        let running = await eventually(timeoutSeconds: timeoutSeconds) {
            guard launcher.isRunning, isRunning else { return true }
            state = ((try? await run(["systemctl", "is-system-running"], timeoutSeconds: 5))?.stdout ?? "")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return state == "running" || state == "degraded"
        }
        guard running, launcher.isRunning, isRunning else {
            throw Failure.bootFailed("state \"\(state)\" after \(timeoutSeconds) s; " + bootLog())
        }
        bootSeconds = Date().timeIntervalSince(started)
    }

    private func bootLog() -> String {
        guard let bootLogFile else { return "boot.log: (none)" }
        lseek(bootLogFile.fileDescriptor, 0, SEEK_SET)
        return "boot.log: " + String(decoding: bootLogFile.readDataToEndOfFile(), as: UTF8.self)
    }
}
