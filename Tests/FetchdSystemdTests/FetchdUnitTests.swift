import FetchdTestSupport
import Foundation
import Testing

/// The shipped units (`systemd/`) against a real systemd: readiness, timers, the journal's
/// fields, reload, the watchdog, stopping, and the sandbox.
extension SystemdTests { @Suite(.serialized) struct FetchdUnitTests {
    static let binDirectory = "/run/fetchd-test/bin"
    static let repository = TestBinaries.sourceTree

    /// Installs the real units (with `@bindir@` pointing at the built binaries), the `fetchd`
    /// user, `fetchd.toml` and `handlers`, plus test drop-ins (`dropIns[unit] = text`).
    static func install(_ namespace: SystemdNamespace, handlers: String, main: String = "heartbeat = \"1h\"",
                        dropIns: [String: String] = [:]) async throws {
        try await namespace.bindMount(TestBinaries.directory, at: binDirectory)
        for name in try FileManager.default.contentsOfDirectory(atPath: repository + "/systemd")
        where [".service", ".socket", ".timer", ".target"].contains(where: name.hasSuffix) {
            let text = try String(contentsOfFile: repository + "/systemd/" + name, encoding: .utf8)
            try namespace.writeFile("/run/systemd/system/" + name, text.replacingOccurrences(of: "@bindir@", with: binDirectory)
                .replacingOccurrences(of: "@libexecdir@", with: binDirectory))
        }
        for (unit, text) in dropIns {
            try namespace.writeFile("/run/systemd/system/\(unit).d/test.conf", text)
        }
        // A sanitizer run's options for the units that run the built binaries.
        let sanitizer = SanitizerRun.unitEnvironment
        for unit in ["fetchd.service", "fetchd-wake.service", "fetchd-planned.service"] where !sanitizer.isEmpty {
            try namespace.writeFile("/run/systemd/system/\(unit).d/sanitizer.conf", "[Service]\n" + sanitizer + "\n")
        }
        try await namespace.check(["systemd-sysusers", repository + "/systemd/fetchd.sysusers"])
        let etc = namespace.hostDirectory(for: "/etc/fetchd")
        try FileManager.default.createDirectory(atPath: etc + "/handlers.d", withIntermediateDirectories: true)
        try (main + "\nkill_grace = \"1s\"\n").write(toFile: etc + "/fetchd.toml", atomically: true, encoding: .utf8)
        try handlers.write(toFile: etc + "/handlers.d/test.toml", atomically: true, encoding: .utf8)
        try await namespace.check(["systemctl", "daemon-reload"])
    }

    static let clock = """
        [[handler]]
        name = "clock"
        kind = "exec"
        command = ["/bin/sh", "-c", "date +%s%N > \\"$FETCHD_OUTPUT\\""]
        """

    // Waits (`eventually`) are generous, 20 to 30 s: they end as soon as what they wait for
    // holds, and on a loaded machine a namespace's systemd, fetchd's start and its first wake
    // took over 10 s (the status-line wait below failed so once, with two busy loops beside it).

    /// The journal entries of fetchd's fetch results for `handler`.
    static func results(_ namespace: SystemdNamespace, _ handler: String) async throws -> [[String: String]] {
        try await namespace.journal(unit: "fetchd.service", extraArgs: ["FETCHD_HANDLER=\(handler)"])
            .filter { $0["FETCHD_RESULT"] != nil }
    }

    @Test func everyUnitPassesVerify() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await Self.install(namespace, handlers: Self.clock)
        let units = ["fetchd.service", "fetchd.socket", "fetchd-wake.timer", "fetchd-wake.service", "fetchd-planned.service"]
        // --man=no: verify looks the units' Documentation= pages up with man, and they are in
        // the system's MANPATH only after `make install`; `make man-check` and ManPageTests
        // check the pages themselves.
        let verify = try await namespace.run(["systemd-analyze", "verify", "--man=no"] + units.map { "/run/systemd/system/" + $0 }
            + ["fetchd-planned@1893456000.timer"])
        #expect(verify.status == 0, "\(verify)")
    }

    @Test func startReachesRunningWithAStatusLineAndTheWakeTimerFetches() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await Self.install(namespace, handlers: Self.clock + "\nmin_interval = \"minimum\"\n", dropIns: [
            "fetchd-wake.timer": "[Timer]\nOnCalendar=\nOnActiveSec=2s\nOnUnitActiveSec=2s\nAccuracySec=100ms\nRandomizedDelaySec=0\n",
        ])
        try await namespace.check(["systemctl", "start", "fetchd.socket", "fetchd.service"])
        #expect(try await namespace.property("ActiveState", of: "fetchd.service") == "active")
        #expect(try await namespace.property("SubState", of: "fetchd.service") == "running")
        var status = ""
        #expect(try await eventually(timeoutSeconds: 30) {
            status = try await namespace.property("StatusText", of: "fetchd.service")
            return status.contains("1 handler")
        }, "STATUS= line: \(status)")
        let shown = try await namespace.run(["systemctl", "status", "fetchd.service", "--no-pager"])
        #expect(shown.stdout.contains("Status: \"1 handler"), "\(shown)")

        // The heartbeat is 1 h, so fetches after the first come from fetchd-wake.timer.
        try await namespace.check(["systemctl", "start", "fetchd-wake.timer"])
        var entries: [[String: String]] = []
        #expect(try await eventually(timeoutSeconds: 20) {
            entries = try await Self.results(namespace, "clock").filter { $0["FETCHD_RESULT"] == "newData" }
            return entries.count >= 3
        }, "fetches: \(entries.map { $0["MESSAGE"] ?? "" })")
        let wakes = try await namespace.journalMessages(unit: "fetchd-wake.service", outputOnly: true)
        #expect(wakes.contains { $0.contains("wake requested") }, "\(wakes)")
        let entry = try #require(entries.last)
        #expect(entry["FETCHD_TRIGGER"] == "timer" && entry["PRIORITY"] == "6")
        #expect(entry["MESSAGE_ID"] == "6ef5c4eb31784cb68e07fb5cf7b70cd8")
        #expect(entry["FETCHD_SNAPSHOT"] == "/var/cache/fetchd/clock/latest/content")
        #expect(Int(entry["FETCHD_DURATION_MS"] ?? "") != nil && Int(entry["FETCHD_BYTES"] ?? "") ?? 0 > 0)
        #expect(entry["CODE_FILE"] != nil && entry["SYSLOG_IDENTIFIER"] == "fetchd")
        let content = namespace.hostDirectory(for: "/var/cache/fetchd") + "/clock/latest/content"
        #expect(FileManager.default.fileExists(atPath: content))
        // The history can be rebuilt from the journal alone.
        let history = try await namespace.run([Self.binDirectory + "/fetchctl", "history", "clock", "--journal", "--json"])
        let rows = try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(rows.count >= 3 && rows.allSatisfy { $0["result"] as? String == "newData" }, "\(history)")
        #expect(rows.allSatisfy { ($0["version"] as? String ?? "").hasPrefix("0000") }, "each row names its snapshot version: \(history)")
        #expect(entry["FETCHD_VERSION"] != nil)
    }

    @Test func aBrokenReloadKeepsTheOldConfigRunning() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await Self.install(namespace, handlers: Self.clock + "\nmin_interval = \"minimum\"\n")
        try await namespace.check(["systemctl", "start", "fetchd.service"])
        #expect(try await eventually(timeoutSeconds: 30) { try await Self.results(namespace, "clock").count >= 1 })
        let good = try await namespace.run(["systemctl", "reload", "fetchd.service"])
        #expect(good.status == 0, "\(good)")
        let broken = namespace.hostDirectory(for: "/etc/fetchd") + "/handlers.d/broken.toml"
        try "[[handler]]\nname = \"news\"\nkind = \"http\"\nurl = \"https://example.invalid/\"\ndeadline = \"soon\"\n"
            .write(toFile: broken, atomically: true, encoding: .utf8)
        // The admin's command fails, and the daemon's answer (in the unit's log) names the problem.
        let reload = try await namespace.run(["systemctl", "reload", "fetchd.service"])
        #expect(reload.status != 0, "\(reload)")
        #expect(try await namespace.property("ActiveState", of: "fetchd.service") == "active")
        let said = try await namespace.journalMessages(unit: "fetchd.service", outputOnly: true)
        #expect(said.contains { $0.contains("rejected the new configuration") }
                    && said.contains { $0.contains("/etc/fetchd/handlers.d/broken.toml:5") }, "\(said)")
        let errors = try await namespace.journal(unit: "fetchd.service", extraArgs: ["-p", "err"])
        let rejected = try #require(errors.first { $0["MESSAGE_ID"] == "182a1ce73ae244ce9d7d4633fdbb2131" },
                                    "no config-rejected entry in \(errors)")
        #expect(rejected["PRIORITY"] == "3")
        #expect(rejected["FETCHD_CONFIG_FILE"] == "/etc/fetchd/handlers.d/broken.toml" && rejected["FETCHD_CONFIG_LINE"] == "5")
        #expect(try await namespace.property("StatusText", of: "fetchd.service").contains("reload rejected"))
        // The old handler still runs on the next wake.
        let before = try await Self.results(namespace, "clock").count
        try await namespace.check(["systemctl", "start", "fetchd-wake.service"])
        #expect(try await eventually(timeoutSeconds: 30) { try await Self.results(namespace, "clock").count > before })
    }

    @Test func aBrokenMainFileLeavesTheSocketUpAndAFixedOneStarts() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await Self.install(namespace, handlers: Self.clock, main: "heartbeat = \"soon\"")
        try await namespace.check(["systemctl", "start", "fetchd.socket"])
        // Clients in a row, as the wake timers and an admin would send: each starts fetchd, which
        // answers it with the problems and exits 78.
        let wake = [Self.binDirectory + "/fetchctl", "wake", "--socket", "/run/fetchd/control.sock"]
        var answer = try await namespace.run(wake)
        for _ in 0..<6 { answer = try await namespace.run(wake) }
        #expect(answer.status != 0)
        #expect(answer.stderr.contains("configuration has problems") && answer.stderr.contains("/etc/fetchd/fetchd.toml:1")
                    && answer.stderr.contains("systemctl start fetchd"), "\(answer)")
        #expect(try await namespace.property("ActiveState", of: "fetchd.socket") == "active")
        #expect(try await namespace.property("Result", of: "fetchd.service") == "exit-code")
        // Fixed, a plain start works, and so does the next client.
        try "heartbeat = \"1h\"\n".write(toFile: namespace.hostDirectory(for: "/etc/fetchd") + "/fetchd.toml",
                                          atomically: true, encoding: .utf8)
        try await namespace.check(["systemctl", "start", "fetchd.service"])
        #expect(try await namespace.property("ActiveState", of: "fetchd.service") == "active")
        let status = try await namespace.run([Self.binDirectory + "/fetchctl", "status", "--socket", "/run/fetchd/control.sock"])
        #expect(status.status == 0 && status.stdout.contains("clock"), "\(status)")
    }

    @Test func aStalledLoopIsRestartedByTheWatchdog() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await Self.install(namespace, handlers: Self.clock, dropIns: [
            "fetchd.service": "[Service]\nWatchdogSec=2s\nRestartSec=500ms\nExecStart=\n"
                + "ExecStart=\(Self.binDirectory)/fetchd --config /etc/fetchd/fetchd.toml --debug-stall-after 2\n",
        ])
        try await namespace.check(["systemctl", "start", "fetchd.service"])
        var restarts = ""
        #expect(try await eventually(timeoutSeconds: 20) {
            restarts = try await namespace.property("NRestarts", of: "fetchd.service")
            return (Int(restarts) ?? 0) >= 1
        }, "NRestarts=\(restarts)")
        let log = try await namespace.journalMessages(unit: "fetchd.service")
        #expect(log.contains { $0.contains("Watchdog timeout") }, "\(log)")
    }

    @Test func stopEndsARunningHandlerPromptlyAndRecordsIt() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await Self.install(namespace, handlers: """
            [[handler]]
            name = "slow"
            kind = "exec"
            command = ["/bin/sh", "-c", "exec sleep 300"]
            deadline = "10m"
            """)
        try await namespace.check(["systemctl", "start", "fetchd.service"])
        #expect(try await eventually(timeoutSeconds: 30) {
            try await namespace.run(["pgrep", "-f", "^sleep 300$"]).status == 0
        })
        let started = Date()
        let stop = try await namespace.run(["systemctl", "stop", "fetchd.service"], timeoutSeconds: 30)
        let seconds = Date().timeIntervalSince(started)
        #expect(stop.status == 0 && seconds < 8, "stop took \(seconds) s: \(stop)")
        #expect(try await namespace.run(["pgrep", "-f", "^sleep 300$"]).status == 1, "the handler outlived the stop")
        #expect(try await namespace.property("Result", of: "fetchd.service") == "success")
        let recorded = try await Self.results(namespace, "slow")
        #expect(recorded.contains { $0["FETCHD_RESULT"] == "failed" && ($0["FETCHD_REASON"] ?? "").contains("shutting down") },
                "\(recorded)")
        let database = namespace.hostDirectory(for: "/var/lib/fetchd") + "/state.sqlite"
        #expect(FileManager.default.fileExists(atPath: database))
    }

    @Test func theDaemonRunsUnprivilegedAndCannotWriteOutsideItsDirectories() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await Self.install(namespace, handlers: """
            [[handler]]
            name = "probe"
            kind = "exec"
            command = ["/bin/sh", "-c", "{ id -un; for f in /usr/probe /etc/probe /etc/fetchd/probe /var/lib/fetchd/probe /root/probe; do touch $f 2>/dev/null && echo wrote $f || echo denied $f; done; } > \\"$FETCHD_OUTPUT\\""]
            min_interval = "1h"
            """)
        try await namespace.check(["systemctl", "start", "fetchd.service"])
        let content = namespace.hostDirectory(for: "/var/cache/fetchd") + "/probe/latest/content"
        #expect(await waitUntil(timeoutSeconds: 15) { FileManager.default.fileExists(atPath: content) })
        let lines = try String(contentsOfFile: content, encoding: .utf8).split(separator: "\n").map(String.init)
        // The program runs as fetchd-exec (fetchd-runas's default user), not as fetchd: it may
        // not write fetchd's state either.
        #expect(lines.first == "fetchd-exec", "\(lines)")
        for path in ["/usr/probe", "/etc/probe", "/etc/fetchd/probe", "/var/lib/fetchd/probe", "/root/probe"] {
            #expect(lines.contains("denied \(path)"), "\(lines)")
        }
        // fetchd's own state directory is its to write: its database is there.
        #expect(FileManager.default.fileExists(atPath: namespace.hostDirectory(for: "/var/lib/fetchd") + "/state.sqlite"))
        // The snapshots are for other programs: another user can read them.
        let reader = try await namespace.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                              "cat", "/var/cache/fetchd/probe/latest/content"])
        #expect(reader.status == 0 && reader.stdout.hasPrefix("fetchd"), "\(reader)")
        #expect(try await Self.mainUser(namespace) == "fetchd")
        // Unprivileged, fetchd may not create its planned timer (no polkit here): it says so once
        // and keeps to its internal timer.
        var notes: [String] = []
        #expect(try await eventually(timeoutSeconds: 5) {
            notes = try await namespace.journalMessages(unit: "fetchd.service", outputOnly: true)
                .filter { $0.contains("planned wakes use fetchd's internal timer") }
            return notes.count == 1
        }, "\(notes)")
    }

    /// fetchd (user fetchd, no capability at all) has fetchd-runas start its programs: one with
    /// `user` as that user, one without as fetchd-exec, each in a unit of its own; what they
    /// wrote is published as fetchd's.
    @Test func fetchdRunasStartsEachProgramAsItsUserAndFetchdHoldsNoPrivilege() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await Self.install(namespace, handlers: """
            [[handler]]
            name = "as-nobody"
            kind = "exec"
            user = "nobody"
            command = ["/bin/sh", "-c", "id -un > \\"$FETCHD_OUTPUT\\""]
            min_interval = "1h"

            [[handler]]
            name = "as-default"
            kind = "exec"
            command = ["/bin/sh", "-c", "id -un > \\"$FETCHD_OUTPUT\\""]
            min_interval = "1h"
            """)
        try await namespace.check(["systemctl", "start", "fetchd.service"])
        let cache = namespace.hostDirectory(for: "/var/cache/fetchd")
        for (handler, user) in [("as-nobody", "nobody"), ("as-default", "fetchd-exec")] {
            var results: [String] = []
            #expect(try await eventually(timeoutSeconds: 20) {
                results = try await Self.results(namespace, handler).map { $0["MESSAGE"] ?? "" }
                return !results.isEmpty
            })
            let content = try? String(contentsOfFile: "\(cache)/\(handler)/latest/content", encoding: .utf8)
            #expect(content == user + "\n", "\(handler): \(results)")
        }
        #expect(try await Self.mainUser(namespace) == "fetchd")
        let pid = try await namespace.property("MainPID", of: "fetchd.service")
        let status = try String(contentsOfFile: namespace.hostPath("/proc/\(pid)/status"), encoding: .utf8)
        #expect(status.contains("CapEff:\t0000000000000000") && status.contains("CapPrm:\t0000000000000000"), "\(status)")
        let runs = try await namespace.run(["journalctl", "--no-pager", "-o", "cat", "-u", "fetchd-runas@*"]).stdout
        #expect(runs.contains("as-nobody (command) as nobody: newData"), "\(runs)")
    }

    /// A program whose child leaves its session (`setsid`) and sleeps: under the shipped unit
    /// (Delegate=yes) the program has a control group of its own, ended whole once the program
    /// exits, so nothing of it is left after its result. The child's pid is the snapshot.
    @Test func nothingOfAProgramOutlivesItsResultNotEvenAChildThatLeftItsSession() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await Self.install(namespace, handlers: Self.escape)
        try await namespace.check(["systemctl", "start", "fetchd.service"])
        let content = namespace.hostDirectory(for: "/var/cache/fetchd") + "/escape/latest/content"
        #expect(await waitUntil(timeoutSeconds: 20) { FileManager.default.fileExists(atPath: content) })
        let pid = try String(contentsOfFile: content, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let left = try await Self.leftOf(namespace, pid: pid)
        #expect(left.isEmpty, "the child that left its session is still there: \(left)")
        let notes = try await namespace.journalMessages(unit: "fetchd.service", outputOnly: true)
        #expect(!notes.contains { $0.contains("programs run in process groups only") }, "\(notes)")
        // Its control group is gone too: only fetchd's own is left.
        let main = try await namespace.property("MainPID", of: "fetchd.service")
        let groups = try await namespace.run(["sh", "-c",
            "m=$(awk '$9 == \"cgroup2\" {print $5}' /proc/self/mountinfo | head -1); p=$(sed -n 's/^0:://p' /proc/$1/cgroup); ls \"$m$p\"",
            "sh", main]).stdout
        // The listing must be of fetchd's group (its interface files), or finding no
        // `program-` in it would prove nothing.
        #expect(groups.contains("cgroup.procs"), "\(groups)")
        #expect(!groups.contains("program-"), "\(groups)")
    }
}
}
