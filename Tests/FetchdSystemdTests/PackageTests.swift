import FetchdTestSupport
import Foundation
import Testing

/// The Debian package `make deb` builds, as an administrator meets it: installed with apt into a
/// systemd namespace whose `/usr`, `/etc` and `/var` are overlays (nothing reaches the host) and
/// whose Swift toolchain is hidden, then upgraded, removed, installed again and purged, each
/// time by dpkg's own maintainer scripts.
extension SystemdTests { @Suite(.serialized, .enabled(if: DebianPackage.built != nil, DebianPackage.skipMessage))
struct PackageTests {
    /// Where the namespace sees the folder of the package being installed.
    static let packageFolder = "/run/fetchd-test/deb"
    /// apt as an administrator runs it, keeping an edited conffile on upgrades.
    static let apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "--yes", "--no-install-recommends",
                      "-o", "Dpkg::Options::=--force-confold"]

    /// Installs (or upgrades to) `package`, a file on the host, with apt; returns apt's output,
    /// which holds what the maintainer scripts printed.
    @discardableResult
    static func install(_ namespace: SystemdNamespace, _ package: String) async throws -> SystemdNamespace.Output {
        let folder = (package as NSString).deletingLastPathComponent, name = (package as NSString).lastPathComponent
        _ = try await namespace.run(["umount", packageFolder])
        try await namespace.bindMount(folder, at: packageFolder)
        return try await namespace.check(apt + [packageFolder + "/" + name], timeoutSeconds: 180)
    }

    /// Installed, it runs with Debian's libraries alone and sleeps when idle, comes up enabled,
    /// fetches an example handler once it is copied in and reloaded, answers fetchctl and logs to
    /// the journal. Then the upgrades, a remove and a new install (PackageTests+Upgrade.swift);
    /// purged, nothing of it is left.
    @Test func installsFetchesUpgradesAndPurgesCleanly() async throws {
        let built = try #require(DebianPackage.built)
        #expect(!DebianPackage.toolchainFolders.isEmpty, "the Swift runtime's folder was not found in /proc/self/maps")
        let namespace = try await SystemdNamespace(privateDirectories: [],
                                                   root: .overlays(hidden: DebianPackage.toolchainFolders))
        defer { namespace.shutdown() }
        // Container images ship a policy-rc.d that forbids starting services (this one does); an
        // administrator's machine has none, and maintainer scripts are to start fetchd there.
        try await namespace.check(["rm", "-f", "/usr/sbin/policy-rc.d"])
        let before = try await DebianPackage.files(namespace)
        let toolchain = try await namespace.run(["find"] + DebianPackage.toolchainFolders + ["-mindepth", "1"])
        #expect(toolchain.stdout.isEmpty, "the toolchain's folders are not hidden inside: \(toolchain)")

        try await Self.install(namespace, built)
        try await installedAsDebianExpects(namespace)
        for unit in ["fetchd.target", "fetchd.service", "fetchd.socket", "fetchd-wake.timer", "fetchd-runas.socket"] {
            let state = try await namespace.property("ActiveState", of: unit)
            if state != "active" {
                let status = try await namespace.run(["systemctl", "status", "--no-pager", "--lines=20", unit])
                Issue.record("\(unit) is \(state) after the install, not active:\n\(status.stdout)\(status.stderr)")
            }
            #expect(try await namespace.property("UnitFileState", of: unit) == "enabled", "\(unit)")
        }
        try await aFirstStartIsClean(namespace)
        #expect(try await namespace.run(["id", "-un", "fetchd"]).stdout == "fetchd\n")
        #expect(try await namespace.run(["id", "-un", "fetchd-exec"]).stdout == "fetchd-exec\n")
        // Linked statically, Swift concurrency must still run on NIO's loops: on libdispatch's
        // executor an idle fetchd wakes every second.
        let switches = try await Self.contextSwitches(namespace, seconds: 5)
        #expect(switches <= 3, "an idle fetchd switched context \(switches) times in 5 s")

        // The example handler, copied in and reloaded, fetches; fetchctl and the journal show it.
        try await namespace.check(["cp", "/usr/share/doc/fetchd/examples/sysfacts.toml", "/etc/fetchd/handlers.d/"])
        try await namespace.check(["systemctl", "reload", "fetchd.service"])
        var results: [[String: String]] = []
        #expect(try await eventually(timeoutSeconds: 30) {
            results = try await SystemdTests.FetchdUnitTests.results(namespace, "sysfacts")
            return results.contains { $0["FETCHD_RESULT"] == "newData" }
        }, "journal: \(results)")
        let status = try await namespace.run(["fetchctl", "status"])
        #expect(status.status == 0 && status.stdout.contains("sysfacts"), "\(status)")
        #expect(FileManager.default.fileExists(atPath: namespace.hostPath("/var/cache/fetchd/sysfacts/latest/content")))
        let said = try await namespace.journalMessages(unit: "fetchd.service", outputOnly: true)
        #expect(!said.contains { $0.contains("stays on libdispatch's executor") }, "\(said)")

        try await theSwitchTurnsEverythingOffAndOn(namespace)
        try await upgradeKeepsStateAndRestartsOnce(namespace, from: built)
        try await upgradeWithABrokenConffileKeepsTheDaemon(namespace, from: built)
        try await removeStopsEverythingAndAnInstallStartsOnce(namespace, from: built)

        // Purged: nothing of fetchd is left, but its user.
        try await namespace.check(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "purge", "--yes", "fetchd"],
                                  timeoutSeconds: 120)
        let left = try await namespace.check(["systemctl", "list-units", "--all", "--no-legend", "--plain", "fetchd*"]).stdout
            .split(separator: "\n").filter { !$0.hasPrefix("fetchd-test.") }
        #expect(left.isEmpty, "units still loaded: \(left)")
        let after = try await DebianPackage.files(namespace)
        let added = after.subtracting(before).filter { !DebianPackage.isBookkeeping($0) }.sorted()
        #expect(added.isEmpty, "left by the package after purge: \(added)")
        let named = after.filter { $0.contains("fetchd") && !$0.contains("fetchd-test") && !$0.hasPrefix("/var/log/") }.sorted()
        #expect(named.isEmpty, "paths naming fetchd after purge: \(named)")
        // Debian keeps system users on purge (files elsewhere may still be theirs).
        #expect(try await namespace.run(["id", "-un", "fetchd"]).stdout == "fetchd\n")
    }

    /// Where dpkg put the files (Debian 12's folders, nothing under /usr/local), the conffile,
    /// and binaries that need no library of the toolchain and carry no RUNPATH.
    func installedAsDebianExpects(_ namespace: SystemdNamespace) async throws {
        let files = Set(try await namespace.check(["dpkg", "-L", "fetchd"]).stdout.split(separator: "\n").map(String.init))
        let expected = ["/usr/bin/fetchd", "/usr/bin/fetchctl", "/usr/libexec/fetchd/fetchd-runas",
                        "/lib/systemd/system/fetchd.service", "/lib/systemd/system/fetchd.target", "/lib/systemd/system/fetchd-runas.socket",
                        "/lib/systemd/system/fetchd-runas@.service", "/usr/share/man/man8/fetchd-runas.8.gz",
                        "/lib/systemd/system/fetchd-planned@.timer", "/usr/lib/systemd/user/fetchd.service",
                        "/usr/lib/systemd/user/fetchd.target",
                        "/usr/lib/sysusers.d/fetchd.conf", "/usr/share/polkit-1/rules.d/60-fetchd.rules",
                        "/usr/share/man/man8/fetchd.8.gz", "/usr/share/man/man1/fetchctl.1.gz",
                        "/usr/share/man/man5/fetchd.toml.5.gz", "/usr/share/man/man7/fetchd-handlers.7.gz",
                        "/usr/share/man/man7/fetchd-snapshots.7.gz", "/usr/share/man/man7/fetchd-push.7.gz",
                        "/usr/share/man/man7/fetchd-dbus.7.gz", "/usr/share/dbus-1/interfaces/org.fetchd.Fetchd1.xml",
                        "/usr/share/dbus-1/system.d/org.fetchd.Fetchd1.conf",
                        "/usr/share/dbus-1/system-services/org.fetchd.Fetchd1.service",
                        "/usr/share/dbus-1/services/org.fetchd.Fetchd1.service",
                        "/usr/share/polkit-1/actions/org.fetchd.Fetchd1.policy",
                        "/usr/share/doc/fetchd/examples/fetchd-client.py",
                        "/usr/share/doc/fetchd/examples/fetchd-alert-notify",
                        "/usr/share/doc/fetchd/examples/fetchd-alert-journal",
                        "/usr/share/doc/fetchd/examples/swift/Package.swift",
                        "/usr/share/doc/fetchd/examples/swift/Sources/fetchd-swift-client/main.swift",
                        "/usr/share/doc/fetchd/threat-model.md", "/usr/share/doc/fetchd/security-notes.md",
                        "/usr/share/doc/fetchd/planned-timer.md", "/usr/share/bash-completion/completions/fetchctl",
                        "/usr/share/zsh/vendor-completions/_fetchctl", "/usr/share/fish/vendor_completions.d/fetchctl.fish",
                        "/etc/fetchd/fetchd.toml", "/etc/fetchd/handlers.d", "/usr/share/doc/fetchd/examples/sysfacts.toml"]
        #expect(expected.filter { !files.contains($0) }.isEmpty, "not installed: \(expected.filter { !files.contains($0) })")
        // What the package set up, how to turn it off, add an operator: README.Debian (dh_compress
        // may compress it).
        #expect(files.contains { $0.hasPrefix("/usr/share/doc/fetchd/README.Debian") }, "no README.Debian")
        #expect(files.filter { $0.hasPrefix("/usr/local") }.isEmpty, "\(files.filter { $0.hasPrefix("/usr/local") })")
        let conffiles = try await namespace.check(["dpkg-query", "-W", "-f", "${Conffiles}", "fetchd"]).stdout
        #expect(conffiles.contains("/etc/fetchd/fetchd.toml"), "conffiles: \(conffiles)")
        let binaries = ["/usr/bin/fetchd", "/usr/bin/fetchctl", "/usr/libexec/fetchd/fetchd-runas"]
        let ldd = try await namespace.check(["ldd"] + binaries).stdout
        #expect(!ldd.contains("not found") && !ldd.contains("swift"), "\(ldd)")
        for binary in binaries {
            let dynamic = try await namespace.check(["readelf", "-d", binary]).stdout
            #expect(!dynamic.contains("RUNPATH") && !dynamic.contains("RPATH"), "\(binary): \(dynamic)")
        }
    }

    /// Right after a fresh install: the D-Bus API answers the first call (the bus read the policy
    /// before fetchd asked for its name), and nothing fetchd logged is a warning an administrator
    /// would chase (`systemctl status fetchd` shows the same lines).
    func aFirstStartIsClean(_ namespace: SystemdNamespace) async throws {
        if try await namespace.property("ActiveState", of: "dbus.service") == "active" {
            let answer = try await Self.callTheBus(namespace)
            #expect(answer.status == 0, "the D-Bus API did not answer after a fresh install: \(answer)")
        }
        let entries = try await namespace.journal(unit: "fetchd.service")
        let warnings = entries.filter { Int($0["PRIORITY"] ?? "6") ?? 6 <= 4 }.map { $0["MESSAGE"] ?? "" }
        #expect(warnings.isEmpty, "a fresh install logged: \(warnings)")
        let said = entries.map { $0["MESSAGE"] ?? "" }
        #expect(!said.contains { $0.contains("not offered") }, "\(said)")
    }

    /// The context switches of every thread of fetchd.service's main process over `seconds`.
    static func contextSwitches(_ namespace: SystemdNamespace, seconds: Int) async throws -> Int {
        let pid = try await namespace.property("MainPID", of: "fetchd.service")
        try await Task.sleep(for: .seconds(1))  // the start's own work done
        let process = namespace.hostPath("/proc/" + pid)
        let first = ProcFile.contextSwitches(of: process).values.reduce(0) { $0 + $1.count }
        try await Task.sleep(for: .seconds(seconds))
        return ProcFile.contextSwitches(of: process).values.reduce(0) { $0 + $1.count } - first
    }
} }
