import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Why systemd tests are skipped here (shown by `swift test` in place of a silent pass).
let systemdSkipMessage = Comment(rawValue: "systemd namespace tests skipped: "
    + (SystemdNamespace.unavailableReason ?? "available"))

/// Every test that boots a systemd namespace, one at a time: each boot costs CPU (systemd,
/// journald, D-Bus), and nine at once on a small machine slow the timing-sensitive tests of the
/// other targets, which `swift test` runs alongside.
@Suite(.serialized, .enabled(if: SystemdNamespace.unavailableReason == nil, systemdSkipMessage))
enum SystemdTests {}

/// The harness itself: systemd boots as PID 1 of its own namespaces, runs transient units and
/// timers, keeps a journal, and leaves nothing behind.
extension SystemdTests { @Suite struct SystemdNamespaceTests {
    @Test func bootsToRunningWithoutTheHostsBootUnits() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        print("systemd namespace booted in \(String(format: "%.2f", namespace.bootSeconds)) s")
        let state = try await namespace.run(["systemctl", "is-system-running"])
        #expect(state.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "running", "\(state)")
        #expect(try await namespace.run(["cat", "/proc/1/comm"]).stdout == "systemd\n")
        #expect(try await namespace.run(["ps", "-o", "ni=", "-p", "1"]).stdout.trimmingCharacters(in: .whitespaces) == "10\n")
        let managerLog = try await namespace.check(["journalctl", "_PID=1", "-o", "cat", "--no-pager"]).stdout
        #expect(managerLog.contains("Reached target fetchd-test.target"), "systemd's own log:\n\(managerLog)")

        // Only the journal, D-Bus and stub targets: nothing from sysinit.target ran (tmpfiles
        // would empty the host's /tmp, systemd-sysctl would set host kernel variables).
        let units = try await namespace.check(["systemctl", "list-units", "--all", "--plain", "--no-legend"]).stdout
        for hostUnit in ["systemd-tmpfiles-setup.service", "systemd-sysctl.service", "systemd-update-utmp.service",
                         "systemd-journal-flush.service", "systemd-sysusers.service"] {
            #expect(!units.contains(hostUnit), "\(hostUnit) is loaded in the namespace:\n\(units)")
        }
        // A unit with default dependencies and PrivateTmp=yes pulls in sysinit.target and wants
        // systemd-tmpfiles-setup.service: the host's /tmp must survive it.
        let shared = try TemporaryDirectory("fetchd-systemd-sentinel")
        defer { shared.remove() }
        let sentinel = try shared.write("still here\n", to: "sentinel")
        try await namespace.check(["systemd-run", "--unit=private-tmp", "-p", "PrivateTmp=yes", "-p", "Type=oneshot",
                             "/bin/sh", "-c", "test ! -e \(sentinel)"])
        #expect(FileManager.default.fileExists(atPath: sentinel), "the host's /tmp was cleaned")
        #expect(try await namespace.property("Result", of: "private-tmp.service") == "success", "PrivateTmp hides host /tmp")
        // systemd runs in its own cgroup, not at the root the host (or another namespace) uses.
        let cgroups = try #require(ProcFile.read("/proc/\(namespace.systemdPID)/cgroup"))
        #expect(cgroups.contains("/\(namespace.cgroupName)/init.scope"), "\(cgroups)")
        // The private folders are bind mounts of the temp folder, visible from the host.
        try await namespace.check(["sh", "-c", "echo private > /var/cache/fetchd/marker"])
        let marker = namespace.hostDirectory(for: "/var/cache/fetchd") + "/marker"
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "private\n")
    }

    @Test func transientUnitOutputReachesTheJournal() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await namespace.check(["systemd-run", "--unit=probe", "--property=Type=oneshot",
                             "/bin/sh", "-c", "echo hello-from-ns"])
        var entries: [[String: String]] = []
        let logged = try await eventually(timeoutSeconds: 5) {
            entries = try await namespace.journal(unit: "probe")
            return entries.contains { $0["MESSAGE"] == "hello-from-ns" }
        }
        #expect(logged, "journal of probe.service: \(entries.compactMap { $0["MESSAGE"] })")
        let line = try #require(entries.first { $0["MESSAGE"] == "hello-from-ns" })
        #expect(line["_SYSTEMD_UNIT"] == "probe.service")
        #expect(line["_TRANSPORT"] == "stdout")
        #expect(try await namespace.property("Result", of: "probe.service") == "success")
    }

    @Test func timerTriggersItsServiceWithinSeconds() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        let shared = try TemporaryDirectory("fetchd-systemd-timer")
        defer { shared.remove() }
        let stamp = shared.file("tick")
        try await namespace.installUnit(name: "tick.service", contents: """
            [Unit]
            Description=tick
            [Service]
            Type=oneshot
            ExecStart=/bin/sh -c 'echo tick-fired; date +%%s.%%N > \(stamp)'
            """)
        try await namespace.installUnit(name: "tick.timer", contents: """
            [Unit]
            Description=tick timer
            [Timer]
            OnActiveSec=1s
            AccuracySec=100ms
            """)
        let started = Date()
        try await namespace.check(["systemctl", "start", "tick.timer"])
        // Waits long (a loaded machine starts units slowly); the lower bound below is the timing check.
        let fired = await waitUntil(timeoutSeconds: 30) { FileManager.default.fileExists(atPath: stamp) }
        let elapsed = Date().timeIntervalSince(started)
        let status = fired ? "" : "\(try await namespace.run(["systemctl", "status", "tick.timer", "tick.service"]))"
        #expect(fired, "tick.service did not run: \(status)")
        #expect(elapsed >= 0.9, "fired after \(elapsed) s, before OnActiveSec=1s")
        #expect(try await eventually(timeoutSeconds: 15) { try await namespace.journalMessages(unit: "tick").contains("tick-fired") })
        #expect(try await namespace.property("Result", of: "tick.service") == "success")
    }

    @Test func shutdownLeavesNoProcessCgroupOrFolder() async throws {
        let namespace = try await SystemdNamespace()
        try await namespace.check(["systemd-run", "--unit=sleeper", "sleep", "1000"])
        try await namespace.check(["sh", "-c", "setsid sleep 1001 >/dev/null 2>&1 &"])
        let pid = namespace.systemdPID, pidNamespace = namespace.pidNamespace
        #expect(SystemdNamespace.processes(inNamespace: pidNamespace).count >= 4, "systemd, journald, 2 sleeps")
        let cgroups = HostProcess.systemdCgroupMounts().map { $0 + "/" + namespace.cgroupName }
        #expect(cgroups.allSatisfy { FileManager.default.fileExists(atPath: $0) })

        let started = Date()
        namespace.shutdown()
        print("systemd namespace shut down in \(String(format: "%.2f", Date().timeIntervalSince(started))) s")
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "systemd (host pid \(pid)) is still alive")
        #expect(SystemdNamespace.processes(inNamespace: pidNamespace).isEmpty)
        #expect(!namespace.isRunning)
        let leftovers = (HostProcess.systemdCgroupMounts() + HostProcess.otherCgroupMounts())
            .map { $0 + "/" + namespace.cgroupName }.filter { FileManager.default.fileExists(atPath: $0) }
        #expect(leftovers.isEmpty, "cgroups left: \(leftovers)")
        #expect(!FileManager.default.fileExists(atPath: namespace.directory.path))
        namespace.shutdown()  // a second call is harmless
    }

    @Test func namespaceDiesWithItsOwner() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await namespace.check(["systemd-run", "--unit=sleeper", "sleep", "1000"])
        let pidNamespace = namespace.pidNamespace
        // What the kernel does to the pipe when the test process is killed, by SIGKILL or a crash.
        namespace.closeLifeline()
        #expect(await waitUntil(timeoutSeconds: 5) { SystemdNamespace.processes(inNamespace: pidNamespace).isEmpty })
        #expect(!namespace.isRunning)
    }

    @Test func commandsTimeOutAndPgrepSeesOnlyTheirOwnProcesses() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        let started = Date()
        let slow = try await namespace.run(["sleep", "30"], timeoutSeconds: 1)
        #expect(slow.status == 128 + SIGKILL, "\(slow)")
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(try await namespace.run(["pgrep", "-x", "sleep"]).status == 1, "the timed-out command was left running")
        // No wrapper inside carries the command line: pgrep -f finds just the process started.
        try await namespace.check(["sh", "-c", "setsid sleep 300 >/dev/null 2>&1 &"])
        let found = try await namespace.run(["pgrep", "-f", "sleep 300"])
        #expect(found.stdout.split(separator: "\n").count == 1, "\(found)")
    }

    @Test func systemdAnalyzeVerifiesUnitFilesInside() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try namespace.writeFile("/run/fetchd-test/verify/good.service", """
            [Unit]
            Description=good
            [Service]
            Type=oneshot
            ExecStart=/bin/true
            """)
        try namespace.writeFile("/run/fetchd-test/verify/bad.service", """
            [Unit]
            Description=bad
            [Service]
            Type=oneshot
            ExecStart=/nonexistent/fetchd-binary
            NoSuchSetting=yes
            """)
        let good = try await namespace.run(["systemd-analyze", "verify", "/run/fetchd-test/verify/good.service"])
        #expect(good.status == 0, "\(good)")
        let bad = try await namespace.run(["systemd-analyze", "verify", "/run/fetchd-test/verify/bad.service"])
        #expect(bad.status != 0, "\(bad)")
        #expect(bad.stderr.contains("/nonexistent/fetchd-binary"), "\(bad)")
        #expect(bad.stderr.contains("NoSuchSetting"), "\(bad)")
    }

    @Test func dynamicUserRunsUnderAFreshNonRootUID() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        // Over the manager's private socket (no D-Bus needed): the output goes to the journal.
        try await namespace.check(["systemd-run", "--unit=dyn", "-p", "DynamicUser=yes", "-p", "Type=oneshot", "id", "-u"])
        var messages: [String] = []
        #expect(try await eventually(timeoutSeconds: 5) {
            messages = try await namespace.journalMessages(unit: "dyn", outputOnly: true)
            return !messages.isEmpty
        })
        let uid = try #require(messages.first.flatMap { Int($0) }, "journal of dyn.service: \(messages)")
        #expect(uid != 0)
        // --wait/--pipe need the system D-Bus, which the harness starts.
        let piped = try await namespace.check(["systemd-run", "-p", "DynamicUser=yes", "--wait", "--pipe", "-q", "id", "-u"])
        let pipedUID = try #require(Int(piped.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(piped)")
        #expect(pipedUID != 0)
    }

    @Test func withoutDBusSystemdRunWaitFailsClearly() async throws {
        let namespace = try await SystemdNamespace(dbus: false)
        defer { namespace.shutdown() }
        let waited = try await namespace.run(["systemd-run", "-p", "Type=oneshot", "--wait", "true"])
        #expect(waited.status != 0)
        #expect(waited.stderr.contains("Failed to connect to bus"), "\(waited)")
    }
}
}
