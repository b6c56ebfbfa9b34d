import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The D-Bus API on the system bus of a real systemd, as installed: the bus policy, the
/// activation file and polkit's actions from `systemd/dbus/` (bind-mounted over the namespace's
/// `/usr/share/dbus-1/system-services` and `/usr/share/polkit-1/actions`, the policy in its
/// private `/etc`), fetchd as the shipped unit runs it (the `fetchd` user), polkitd from the
/// host, and the Python example client run as two users. The namespace has a network of its own
/// whose `lo` holds a "remote" address (a documentation range, global for fetchd's checks) with
/// a web server on it, so an unprivileged user's registration fetches for real.
extension SystemdTests { @Suite(.serialized) struct DBusSystemBusTests {
    static let remote = RemoteAddresses.first
    static let client = "/run/fetchd-test/fetchd-client.py"
    /// alice may register (a polkit rule grants it, as an administrator would); bob has only the
    /// shipped defaults, which here (no logind, so no active session) refuse him.
    static let alice = "4242", bob = "4343"

    /// Everything but fetchd itself, which the first call starts.
    static func prepare(_ namespace: SystemdNamespace) async throws {
        try await FetchdUnitTests.install(namespace, handlers: FetchdUnitTests.clock,
                                          main: "heartbeat = \"1h\"\ndbus_api = \"system\"")
        let dbus = FetchdUnitTests.repository + "/systemd/dbus/"
        try namespace.writeFile("/etc/dbus-1/system.d/org.fetchd.Fetchd1.conf",
                                try String(contentsOfFile: dbus + "org.fetchd.Fetchd1.conf", encoding: .utf8))
        try await overlay(namespace, "/usr/share/dbus-1/system-services", with: dbus + "system-services/org.fetchd.Fetchd1.service")
        try await overlay(namespace, "/usr/share/polkit-1/actions", with: dbus + "org.fetchd.Fetchd1.policy")
        try namespace.writeFile("/etc/polkit-1/rules.d/50-fetchd-test.rules", """
            polkit.addRule(function(action, subject) {
                if (action.id == "org.fetchd.Fetchd1.register-own" && subject.user == "alice") return polkit.Result.YES;
            });
            """)
        try namespace.writeFile("/run/systemd/system/polkit.service",
                                try String(contentsOfFile: "/lib/systemd/system/polkit.service", encoding: .utf8))
        try namespace.writeFile(client, try String(contentsOfFile: FetchdUnitTests.repository + "/examples/python/fetchd-client.py",
                                                   encoding: .utf8), mode: 0o755)
        try await namespace.check(["systemd-sysusers", "-"], stdin: "u alice \(alice) - /\nu bob \(bob) - /\n")
        try namespace.writeFile("/run/www/news.txt", "hello system bus\n")
        try await namespace.check(["systemctl", "daemon-reload"])
        // Enabled, as the package leaves it: D-Bus activation asks for the alias this creates.
        try await namespace.check(["systemctl", "enable", "--runtime", "fetchd.service"])
        try await namespace.check(["systemd-run", "--unit=www", "--property=DynamicUser=yes", "/usr/bin/python3", "-m", "http.server",
                                   "8080", "--bind", remote, "--directory", "/run/www"])
        try await namespace.check(["systemctl", "start", "polkit.service"])
        try await namespace.check(["systemctl", "reload", "dbus.service"])
    }

    /// Bind-mounts over `folder` a copy of it with `file` added.
    static func overlay(_ namespace: SystemdNamespace, _ folder: String, with file: String) async throws {
        let copy = namespace.directory.file("overlay" + folder.replacingOccurrences(of: "/", with: "_"))
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            try FileManager.default.copyItem(atPath: folder + "/" + name, toPath: copy + "/" + name)
        }
        try FileManager.default.copyItem(atPath: file, toPath: copy + "/" + (file as NSString).lastPathComponent)
        chmod(copy, 0o755)
        try await namespace.bindMount(copy, at: folder)
    }

    /// The client's output as `uid` (root when nil).
    static func client(_ namespace: SystemdNamespace, as uid: String?, _ arguments: [String],
                       timeoutSeconds: Double = 30) async throws -> SystemdNamespace.Output {
        let user = uid.map { ["setpriv", "--reuid=\($0)", "--regid=\($0)", "--clear-groups"] } ?? []
        return try await namespace.run(user + ["/usr/bin/python3", client, "--system"] + arguments, timeoutSeconds: timeoutSeconds)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/lib/polkit-1/polkitd"), "needs polkitd"))
    func activationPolkitAndPerUIDSignalsOnTheSystemBus() async throws {
        let namespace = try await SystemdNamespace(network: ["\(Self.remote)/32"])
        defer { namespace.shutdown() }
        try await Self.prepare(namespace)
        #expect(try await namespace.property("ActiveState", of: "fetchd.service") == "inactive")

        // Bus activation: the first call starts fetchd through systemd, as the fetchd user.
        let first = try await Self.client(namespace, as: Self.alice, ["list"])
        #expect(first.status == 0 && first.stdout.isEmpty, "\(first)")
        #expect(try await namespace.property("ActiveState", of: "fetchd.service") == "active")
        #expect(try await namespace.property("User", of: "fetchd.service") == "fetchd")

        let url = "http://\(Self.remote):8080/news.txt"
        let registered = try await Self.client(namespace, as: Self.alice, ["register", "news", url])
        #expect(registered.stdout == "news@\(Self.alice)\n", "\(registered)")
        // bob listens (eavesdropping if the bus let him) while alice's handler is fetched.
        try await namespace.check(["systemd-run", "--unit=bob-watch", "--uid=bob", "--property=StandardOutput=file:/run/bob-watch.out",
                                   "/usr/bin/python3", Self.client, "--system", "watch", "12"])
        #expect(await eventually(timeoutSeconds: 10) {
            (try? String(contentsOfFile: namespace.hostPath("/run/bob-watch.out"), encoding: .utf8))?.contains("# watching") == true
        })
        let fetched = try await Self.client(namespace, as: Self.alice, ["fetch", "news", "25"])
        #expect(fetched.status == 0 && ["newData", "noData"].contains(fetched.stdout.split(separator: " ").first ?? ""), "\(fetched)")
        let read = try await Self.client(namespace, as: Self.alice, ["read", "news"])
        #expect(read.stdout.hasSuffix("\nhello system bus\n") && read.stdout.contains("content_type="), "\(read)")
        #expect(await eventually(timeoutSeconds: 20) {
            (try? await namespace.property("ActiveState", of: "bob-watch.service")) != "active"
        })
        let watched = try String(contentsOfFile: namespace.hostPath("/run/bob-watch.out"), encoding: .utf8)
        #expect(!watched.split(separator: "\n").contains { !$0.hasPrefix("#") }, "bob saw alice's signals: \(watched)")

        // polkit decides for bob: no rule grants him registration, and reaching alice's handler
        // needs an administrator's authentication, which a non-interactive call cannot give.
        let bobRegisters = try await Self.client(namespace, as: Self.bob, ["register", "mine", url])
        #expect(bobRegisters.stdout.hasPrefix("ERROR org.fetchd.Fetchd1.Error.NotPermitted: polkit does not allow you to register handlers"),
                "\(bobRegisters)")
        let bobReaches = try await Self.client(namespace, as: Self.bob, ["status", "news@\(Self.alice)"])
        #expect(bobReaches.stdout.hasPrefix("ERROR org.freedesktop.DBus.Error.InteractiveAuthorizationRequired:"), "\(bobReaches)")
        let bobOwn = try await Self.client(namespace, as: Self.bob, ["unregister", "news"])
        #expect(bobOwn.stdout.hasPrefix("ERROR org.fetchd.Fetchd1.Error.NotFound:"), "\(bobOwn)")
        // Config-file handlers are out of reach: "clock" names alice's own, which does not exist.
        let configHandler = try await Self.client(namespace, as: Self.alice, ["unregister", "clock"])
        #expect(configHandler.stdout.hasPrefix("ERROR org.fetchd.Fetchd1.Error.NotFound:"), "\(configHandler)")
        // Root needs no polkit.
        let rootReaches = try await Self.client(namespace, as: nil, ["status", "news@\(Self.alice)"])
        #expect(rootReaches.status == 0 && rootReaches.stdout.contains("kind=http"), "\(rootReaches)")

        // The registration outlives a restart, and status shows it beside the config's handler.
        try await namespace.check(["systemctl", "restart", "fetchd.service"])
        let kept = try await Self.client(namespace, as: Self.alice, ["list"])
        #expect(kept.stdout == "news\n", "\(kept)")
        let status = try await namespace.check([FetchdUnitTests.binDirectory + "/fetchctl", "status", "--socket", "/run/fetchd/control.sock"])
        #expect(status.stdout.contains("news@\(Self.alice)") && status.stdout.contains("clock"), "\(status)")
    }
} }
