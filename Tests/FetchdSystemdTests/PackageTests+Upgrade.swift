import FetchdTestSupport
import Foundation
import Testing

/// The package's life after its first install: upgrades to other Debian revisions of the same
/// binaries (repacked, so the maintainer scripts are the ones under test), a remove and a new
/// install.
extension SystemdTests.PackageTests {
    /// 0.1.0-1 → 0.1.0-2, with a handler file the new version rejects (it starts without that
    /// handler): state, snapshots and an edited conffile stay; the daemon restarts exactly once.
    func upgradeKeepsStateAndRestartsOnce(_ namespace: SystemdNamespace, from built: String) async throws {
        let conffile = namespace.hostPath("/etc/fetchd/fetchd.toml")
        let edited = try String(contentsOfFile: conffile, encoding: .utf8) + "\n# Edited by the administrator.\n"
        try namespace.writeFile("/etc/fetchd/fetchd.toml", edited)
        try namespace.writeFile("/etc/fetchd/handlers.d/bad.toml", "[[handler]]\nname = \"bad\"\nkind = \"http\"\nurl = \"ftp://x/\"\n")
        let history = try await Self.historyCount(namespace)
        let versions = try FileManager.default.contentsOfDirectory(atPath: namespace.hostPath("/var/cache/fetchd/sysfacts/versions"))
        let database = try FileManager.default.attributesOfItem(atPath: namespace.hostPath("/var/lib/fetchd/state.sqlite"))
        let invocation = try await namespace.property("InvocationID", of: "fetchd.service")
        let cursor = try await Self.journalCursor(namespace)

        let next = try await DebianPackage.repack(built, revision: 2)
        defer { next.folder.remove() }
        let upgrade = try await Self.install(namespace, next.path)
        #expect((upgrade.stdout + upgrade.stderr).contains("handlers.d/bad.toml:4"), "\(upgrade)")
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
        #expect(try await Self.starts(namespace, after: cursor) == 1, "fetchd did not start exactly once")
        try FileManager.default.removeItem(atPath: namespace.hostPath("/etc/fetchd/handlers.d/bad.toml"))
    }

    /// With a conffile the new version would not start with, the upgrade succeeds, the running
    /// daemon is left alone, and `systemctl status fetchd` names the file and line.
    func upgradeWithABrokenConffileKeepsTheDaemon(_ namespace: SystemdNamespace, from built: String) async throws {
        let text = try String(contentsOfFile: namespace.hostPath("/etc/fetchd/fetchd.toml"), encoding: .utf8)
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
        try namespace.writeFile("/etc/fetchd/fetchd.toml", text)
    }

    /// `dpkg --remove` stops the units and the planned timers fetchd started, and keeps the
    /// configuration and state; installing again (dpkg sees an upgrade from the config-files
    /// state) starts fetchd once, on the state it had.
    func removeStopsEverythingAndAnInstallStartsOnce(_ namespace: SystemdNamespace, from built: String) async throws {
        try await namespace.check(["systemctl", "start", "fetchd-planned@4102444800.timer"])
        let history = try await Self.historyCount(namespace)
        try await namespace.check(["dpkg", "--remove", "fetchd"], timeoutSeconds: 120)
        for unit in ["fetchd.service", "fetchd.socket", "fetchd-wake.timer", "fetchd-planned@4102444800.timer"] {
            #expect(try await namespace.property("ActiveState", of: unit) == "inactive", "\(unit) after remove")
        }
        #expect(FileManager.default.fileExists(atPath: namespace.hostPath("/var/lib/fetchd/state.sqlite")))
        #expect(FileManager.default.fileExists(atPath: namespace.hostPath("/etc/fetchd/fetchd.toml")))

        let cursor = try await Self.journalCursor(namespace)
        let next = try await DebianPackage.repack(built, revision: 3)
        defer { next.folder.remove() }
        try await Self.install(namespace, next.path)
        #expect(try await namespace.property("ActiveState", of: "fetchd.service") == "active")
        #expect(try await Self.starts(namespace, after: cursor) == 1, "fetchd did not start exactly once")
        #expect(try await Self.historyCount(namespace) >= history, "fetch history lost")
    }

    /// How many times systemd started fetchd.service since the journal entry at `cursor`.
    static func starts(_ namespace: SystemdNamespace, after cursor: String) async throws -> Int {
        try await namespace.journal(unit: "fetchd.service", extraArgs: ["--after-cursor", cursor])
            .filter { $0["MESSAGE_ID"] == DebianPackage.unitStartedMessageID && $0["_PID"] == "1" }.count
    }

    /// How many results `fetchctl history sysfacts` lists.
    static func historyCount(_ namespace: SystemdNamespace) async throws -> Int {
        let output = try await namespace.check(["fetchctl", "history", "sysfacts", "--json"]).stdout
        return (try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [Any])?.count ?? 0
    }

    /// The cursor of the journal's newest entry.
    static func journalCursor(_ namespace: SystemdNamespace) async throws -> String {
        let output = try await namespace.check(["journalctl", "-n", "1", "-o", "json", "--no-pager"]).stdout
        let entry = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        return try #require(entry?["__CURSOR"] as? String)
    }
}
