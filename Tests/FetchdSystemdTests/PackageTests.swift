import FetchdTestSupport
import Foundation
import Testing

/// The Debian package `make deb` builds, as an administrator meets it: installed with apt into a
/// systemd namespace whose `/usr`, `/etc` and `/var` are overlays (nothing reaches the host) and
/// whose Swift toolchain is hidden, then upgraded and purged with dpkg's own scripts.
extension SystemdTests { @Suite(.serialized, .enabled(if: DebianPackage.built != nil, DebianPackage.skipMessage))
struct PackageTests {
    /// Where the namespace sees the folder of the built package.
    static let packageFolder = "/run/fetchd-test/deb"
    static let apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "--yes",
                      "-o", "Dpkg::Options::=--force-confold"]

    /// Installs (or upgrades to) `package`, a file on the host, with apt; returns apt's output.
    @discardableResult
    static func install(_ namespace: SystemdNamespace, _ package: String) async throws -> SystemdNamespace.Output {
        let folder = (package as NSString).deletingLastPathComponent, name = (package as NSString).lastPathComponent
        _ = try await namespace.run(["umount", packageFolder])
        try await namespace.bindMount(folder, at: packageFolder)
        return try await namespace.check(apt + [packageFolder + "/" + name], timeoutSeconds: 180)
    }

    /// Installed, it runs with Debian's libraries alone, comes up enabled, fetches an example
    /// handler once it is copied in and reloaded, answers fetchctl and logs to the journal.
    /// Upgraded to another Debian revision of the same binaries, it keeps its state, snapshots
    /// and the administrator's conffile and restarts once; upgraded with a broken conffile, it
    /// keeps running and says where the problem is; purged, nothing of it is left.
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
        for unit in ["fetchd.service", "fetchd.socket", "fetchd-wake.timer"] {
            #expect(try await namespace.property("ActiveState", of: unit) == "active", "\(unit)")
            #expect(try await namespace.property("UnitFileState", of: unit) == "enabled", "\(unit)")
            #expect(try await namespace.property("FragmentPath", of: unit) == "/lib/systemd/system/" + unit)
        }
        let ldd = try await namespace.check(["ldd", "/usr/bin/fetchd", "/usr/bin/fetchctl"]).stdout
        #expect(!ldd.contains("not found") && !ldd.contains("swift"), "\(ldd)")
        #expect(try await namespace.run(["id", "-un", "fetchd"]).stdout == "fetchd\n")
        // Linked statically, the Swift runtime's executor hook must still be found (dlsym), or
        // the idle daemon wakes every second.
        let said = try await namespace.journalMessages(unit: "fetchd.service", outputOnly: true)
        #expect(!said.contains { $0.contains("stays on libdispatch's executor") }, "\(said)")

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

        try await upgradeKeepsStateAndRestartsOnce(namespace, from: built)
        try await upgradeWithABrokenConffileKeepsTheDaemon(namespace, from: built)

        // Purged: a planned timer fetchd had started goes too, and nothing of fetchd is left.
        try await namespace.check(["systemctl", "start", "fetchd-planned@4102444800.timer"])
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

    /// 0.1.0-1 → 0.1.0-2 of the same binaries: state, snapshots and an edited conffile stay; the
    /// daemon restarts exactly once.
    func upgradeKeepsStateAndRestartsOnce(_ namespace: SystemdNamespace, from built: String) async throws {
        let conffile = namespace.hostPath("/etc/fetchd/fetchd.toml")
        let edited = try String(contentsOfFile: conffile, encoding: .utf8) + "\n# Edited by the administrator.\n"
        try namespace.writeFile("/etc/fetchd/fetchd.toml", edited)
        let history = try await Self.historyCount(namespace)
        let versions = try FileManager.default.contentsOfDirectory(atPath: namespace.hostPath("/var/cache/fetchd/sysfacts/versions"))
        let database = try FileManager.default.attributesOfItem(atPath: namespace.hostPath("/var/lib/fetchd/state.sqlite"))
        let invocation = try await namespace.property("InvocationID", of: "fetchd.service")
        let cursor = try await Self.journalCursor(namespace)

        let next = try await DebianPackage.repack(built, revision: 2)
        defer { next.folder.remove() }
        try await Self.install(namespace, next.path)
        #expect(try await namespace.check(["dpkg-query", "-W", "-f", "${Version}", "fetchd"]).stdout.hasSuffix("-2"))
        #expect(try String(contentsOfFile: conffile, encoding: .utf8) == edited, "the edited conffile was replaced")
        let strays = try FileManager.default.contentsOfDirectory(atPath: namespace.hostPath("/etc/fetchd")).filter { $0.contains("dpkg") }
        #expect(strays.isEmpty, "\(strays)")
        #expect(try await Self.historyCount(namespace) >= history, "fetch history lost")
        let kept = try FileManager.default.contentsOfDirectory(atPath: namespace.hostPath("/var/cache/fetchd/sysfacts/versions"))
        #expect(Set(versions).isSubset(of: Set(kept)), "snapshot versions lost: \(versions) → \(kept)")
        let reopened = try FileManager.default.attributesOfItem(atPath: namespace.hostPath("/var/lib/fetchd/state.sqlite"))
        #expect(reopened[.systemFileNumber] as? Int == database[.systemFileNumber] as? Int, "the state database was replaced")
        #expect(try await namespace.property("InvocationID", of: "fetchd.service") != invocation)
        #expect(try await namespace.property("ActiveState", of: "fetchd.service") == "active")
        let starts = try await namespace.journal(unit: "fetchd.service", extraArgs: ["--after-cursor", cursor])
            .filter { $0["MESSAGE_ID"] == DebianPackage.unitStartedMessageID && $0["_PID"] == "1" }
        #expect(starts.count == 1, "fetchd started \(starts.count) times during the upgrade")
    }

    /// With a conffile the new version rejects, the upgrade succeeds, the running daemon is left
    /// alone, and `systemctl status fetchd` names the file and line.
    func upgradeWithABrokenConffileKeepsTheDaemon(_ namespace: SystemdNamespace, from built: String) async throws {
        let conffile = namespace.hostPath("/etc/fetchd/fetchd.toml")
        let text = try String(contentsOfFile: conffile, encoding: .utf8)
        let line = text.split(separator: "\n", omittingEmptySubsequences: false).count
        try namespace.writeFile("/etc/fetchd/fetchd.toml", text + "heartbeat = \"soon\"\n")
        let invocation = try await namespace.property("InvocationID", of: "fetchd.service")

        let next = try await DebianPackage.repack(built, revision: 3)
        defer { next.folder.remove() }
        let upgrade = try await Self.install(namespace, next.path)
        // apt passes what the maintainer scripts print on to its standard output.
        let said = upgrade.stdout + upgrade.stderr
        #expect(said.contains("not restarted") && said.contains("/etc/fetchd/fetchd.toml:\(line)"), "\(upgrade)")
        #expect(try await namespace.property("InvocationID", of: "fetchd.service") == invocation, "fetchd was restarted")
        #expect(try await namespace.property("ActiveState", of: "fetchd.service") == "active")
        var shown = ""
        #expect(try await eventually(timeoutSeconds: 20) {
            shown = try await namespace.run(["systemctl", "status", "fetchd.service", "--no-pager"]).stdout
            return shown.contains("/etc/fetchd/fetchd.toml:\(line)")
        }, "systemctl status: \(shown)")
    }

    static func historyCount(_ namespace: SystemdNamespace) async throws -> Int {
        let output = try await namespace.check(["fetchctl", "history", "sysfacts", "--json"]).stdout
        return (try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [Any])?.count ?? 0
    }

    static func journalCursor(_ namespace: SystemdNamespace) async throws -> String {
        let output = try await namespace.check(["journalctl", "-n", "1", "-o", "json", "--no-pager"]).stdout
        let entry = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        return try #require(entry?["__CURSOR"] as? String)
    }
} }
