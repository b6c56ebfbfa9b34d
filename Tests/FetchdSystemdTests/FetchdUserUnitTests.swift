import FetchdTestSupport
import Foundation
import Testing

/// The shipped user units (`systemd/user/`) under a real user manager, run for an unprivileged
/// user inside the namespace: where they keep the state, the cache and the socket, and with
/// which modes.
extension SystemdTests { @Suite(.serialized) struct FetchdUserUnitTests {
    static let user = "alice", uid = "4242"
    static let home = "/run/fetchd-test/home/alice"

    /// Runs `argv` as the test user, with the environment `systemctl --user` needs.
    static func asUser(_ namespace: SystemdNamespace, _ argv: [String]) async throws -> SystemdNamespace.Output {
        try await namespace.run(["setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups",
                                 "env", "HOME=\(home)", "XDG_RUNTIME_DIR=/run/user/\(uid)"] + argv)
    }

    /// `stat -c '%a %U'` of a path inside the namespace, or nil when it does not exist.
    static func modeAndOwner(_ namespace: SystemdNamespace, _ path: String) async throws -> String? {
        let out = try await namespace.run(["stat", "-c", "%a %U", path])
        return out.status == 0 ? out.stdout.trimmingCharacters(in: .whitespacesAndNewlines) : nil
    }

    @Test func stateGoesToTheUsersStateFolderAndStaysPrivate() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await namespace.bindMount(TestBinaries.directory, at: FetchdUnitTests.binDirectory)
        let sysusers = "u \(Self.user) \(Self.uid) \"fetchd test user\" \(Self.home) /bin/sh\n"
        try await namespace.check(["systemd-sysusers", "-"], stdin: sysusers)
        try await namespace.check(["install", "-d", "-m", "0700", "-o", Self.user, "-g", Self.user, Self.home])
        for name in try FileManager.default.contentsOfDirectory(atPath: FetchdUnitTests.repository + "/systemd/user") {
            let text = try String(contentsOfFile: FetchdUnitTests.repository + "/systemd/user/" + name, encoding: .utf8)
            try namespace.writeFile("/etc/systemd/user/" + name,
                                    text.replacingOccurrences(of: "@bindir@", with: FetchdUnitTests.binDirectory))
        }
        // A user manager builds its units' mount namespaces in /run/systemd/unit-root, which it
        // cannot make in root's /run/systemd (without it: 226/NAMESPACE, "Failed to mount / ... on
        // /run/systemd/unit-root: No such file or directory"). PID 1 makes it for the first system
        // service with a mount namespace; on a real host that is systemd-logind, which starts every
        // user manager. Here a service of that kind does it.
        try await namespace.check(["systemd-run", "--wait", "--quiet", "-p", "PrivateMounts=yes", "true"])
        // The user's manager, started as the system would (user@.service needs PAM and logind).
        try namespace.writeFile("/run/systemd/system/fetchd-test-user.service", """
            [Service]
            Type=notify
            User=\(Self.user)
            Environment=XDG_RUNTIME_DIR=/run/user/\(Self.uid)
            ExecStartPre=+/usr/bin/install -d -m 0700 -o \(Self.user) -g \(Self.user) /run/user/\(Self.uid)
            ExecStart=/lib/systemd/systemd --user
            Delegate=yes
            """)
        // One handler, in the user's own config folder (owned by the user: fetchd trusts it).
        try namespace.writeFile(Self.home + "/.config/fetchd/handlers.d/clock.toml", FetchdUnitTests.clock + "\n")
        try namespace.writeFile(Self.home + "/.config/fetchd/handlers.d/escape.toml", FetchdUnitTests.escape + "\n")
        try await namespace.check(["chown", "-R", "\(Self.user):\(Self.user)", Self.home + "/.config"])
        try await namespace.check(["systemctl", "daemon-reload"])
        try await namespace.check(["systemctl", "start", "fetchd-test-user.service"])
        let start = try await Self.asUser(namespace, ["systemctl", "--user", "start", "fetchd.socket", "fetchd.service"])
        if start.status != 0 {
            let why = try await Self.asUser(namespace, ["systemctl", "--user", "status", "fetchd.service", "--no-pager", "-l"])
            Issue.record("the user's fetchd did not start: \(start)\n\(why)")
        }
        let state = Self.home + "/.local/state/fetchd"
        var database: String?
        #expect(try await eventually(timeoutSeconds: 20) {
            database = try await Self.modeAndOwner(namespace, state + "/state.sqlite")
            return database != nil
        }, "no database under \(state)")
        #expect(database == "600 \(Self.user)")
        #expect(try await Self.modeAndOwner(namespace, state) == "700 \(Self.user)")
        #expect(try await Self.modeAndOwner(namespace, Self.home + "/.config/fetchd/state.sqlite") == nil)
        #expect(try await Self.modeAndOwner(namespace, "/run/user/\(Self.uid)/fetchd/control.sock") != nil)
        // The sandbox is in place, not skipped: a user manager drops mount-namespace options in
        // silence when it cannot set them up, so look at fetchd's own mounts.
        let main = try await Self.asUser(namespace, ["systemctl", "--user", "show", "-p", "MainPID", "--value", "fetchd.service"])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let mounts = try await namespace.run(["cat", "/proc/\(main)/mountinfo"]).stdout.split(separator: "\n")
        for path in ["/usr", "/etc"] {
            let line = mounts.last { $0.split(separator: " ").dropFirst(4).first.map(String.init) == path }
            #expect(line?.split(separator: " ").dropFirst(5).first?.split(separator: ",").contains("ro") == true,
                    "\(path) is not read-only for fetchd: \(line.map(String.init) ?? "no mount")")
        }
        // Desktop background work: in the user's background.slice, with its low CPU weight.
        for property in ["Slice", "CPUWeight"] {
            let value = try await Self.asUser(namespace, ["systemctl", "--user", "show", "-p", property, "--value", "fetchd.service"])
            #expect(value.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == (property == "Slice" ? "background.slice" : "20"),
                    "\(property): \(value)")
        }
        let status = try await Self.asUser(namespace, [FetchdUnitTests.binDirectory + "/fetchctl", "status",
                                                       "--socket", "/run/user/\(Self.uid)/fetchd/control.sock"])
        #expect(status.status == 0, "\(status)")
        // A handler runs inside the sandbox and publishes into the user's cache.
        let fetch = try await Self.asUser(namespace, [FetchdUnitTests.binDirectory + "/fetchctl", "fetch", "clock", "--wait",
                                                      "--socket", "/run/user/\(Self.uid)/fetchd/control.sock"])
        #expect(fetch.status == 0 && fetch.stdout.contains("newData"), "\(fetch)")
        #expect(try await Self.modeAndOwner(namespace, Self.home + "/.cache/fetchd/clock/latest/content") != nil)
        // A child that left its program's session does not outlive the result (Delegate=yes).
        let escape = try await Self.asUser(namespace, [FetchdUnitTests.binDirectory + "/fetchctl", "fetch", "escape", "--wait",
                                                       "--socket", "/run/user/\(Self.uid)/fetchd/control.sock"])
        #expect(escape.status == 0, "\(escape)")
        let pid = try await namespace.run(["cat", Self.home + "/.cache/fetchd/escape/latest/content"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let left = try await FetchdUnitTests.leftOf(namespace, pid: pid)
        #expect(left.isEmpty, "the child that left its session is still there: \(left)")
        // The wake and planned services, in their sandbox (a user namespace, no network, a
        // read-only system and home), still reach fetchd: a oneshot whose fetchctl could not
        // connect would fail the start.
        for service in ["fetchd-wake.service", "fetchd-planned.service"] {
            let wake = try await Self.asUser(namespace, ["systemctl", "--user", "start", service])
            #expect(wake.status == 0, "\(service): \(wake)")
        }
    }

    /// `systemd-analyze --user verify` passes the user units as shipped, in background.slice
    /// (it needs `XDG_RUNTIME_DIR` even with no manager to ask).
    @Test func theUserUnitsPassVerifyInTheBackgroundSlice() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchd-user-units-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let shipped = FetchdUnitTests.repository + "/systemd/user"
        let names = try FileManager.default.contentsOfDirectory(atPath: shipped).filter { !$0.contains("@") }
        for name in names {
            let text = try String(contentsOfFile: shipped + "/" + name, encoding: .utf8)
            try text.replacingOccurrences(of: "@bindir@", with: TestBinaries.directory)
                .write(toFile: folder + "/" + name, atomically: true, encoding: .utf8)
            if name.hasSuffix(".service") { #expect(text.contains("\nSlice=background.slice\n"), "\(name)") }
        }
        let verify = try await HostProcess.run(HostProcess.tool("sh") ?? "/bin/sh", ["-c",
            "cd \"$1\" && shift && XDG_RUNTIME_DIR=\"$PWD\" systemd-analyze --user verify --man=no \"$@\"", "sh", folder]
            + names.map { "./" + $0 }, timeoutSeconds: 60)
        #expect(verify.status == 0 && verify.stderr.isEmpty, "\(verify)")
    }
} }
