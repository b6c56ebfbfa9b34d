import FetchdTestSupport
import Foundation
import Testing

/// The built `fetchd` as a real systemd service: started and stopped by `systemctl`, logging to
/// the journal, writing into its state and cache directories.
extension SystemdTests { @Suite struct FetchdServiceTests {
    /// Where the built products appear inside the namespace (a read-only bind mount in its private
    /// /run: no copy of the large debug binaries, and the same path whatever the build folder).
    static let binDirectory = "/run/fetchd-test/bin"

    /// Makes `fetchd` and `fetchctl` available in the namespace, writes the configuration into its
    /// private /etc/fetchd and installs `fetchd.service`.
    static func install(in namespace: SystemdNamespace) async throws {
        try await namespace.bindMount(TestBinaries.directory, at: binDirectory)
        let etc = namespace.hostDirectory(for: "/etc/fetchd")
        try """
            cache_dir = "/var/cache/fetchd"
            state_dir = "/var/lib/fetchd"
            runtime_dir = "/run/fetchd"
            heartbeat = "1s"
            kill_grace = "1s"
            """.write(toFile: etc + "/fetchd.toml", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: etc + "/handlers.d", withIntermediateDirectories: true)
        try """
            [[handler]]
            name = "clock"
            kind = "exec"
            command = ["/bin/sh", "-c", "date > \\"$FETCHD_OUTPUT\\""]
            min_interval = "1h"
            deadline = "5s"
            """.write(toFile: etc + "/handlers.d/clock.toml", atomically: true, encoding: .utf8)
        try await namespace.installUnit(name: "fetchd.service", contents: """
            [Unit]
            Description=fetchd under test
            [Service]
            Type=exec
            ExecStart=\(binDirectory)/fetchd --config /etc/fetchd/fetchd.toml
            RuntimeDirectory=fetchd
            TimeoutStopSec=20s
            \(SanitizerRun.unitEnvironment)
            """)
    }

    @Test func fetchdStartsFetchesLogsAndStopsUnderSystemd() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        try await Self.install(in: namespace)

        try await namespace.check(["systemctl", "start", "fetchd.service"])
        let content = namespace.hostDirectory(for: "/var/cache/fetchd") + "/clock/latest/content"
        let fetched = await waitUntil(timeoutSeconds: 20) { FileManager.default.fileExists(atPath: content) }
        func log() async -> String {
            (try? await namespace.journalMessages(unit: "fetchd.service"))?.joined(separator: "\n") ?? ""
        }
        let startLog = await log()
        #expect(fetched, "no snapshot at \(content); journal:\n\(startLog)")
        #expect(try await namespace.property("ActiveState", of: "fetchd.service") == "active", "\(startLog)")
        #expect(FileManager.default.fileExists(atPath: namespace.hostDirectory(for: "/var/lib/fetchd")
            + "/state.sqlite"), "fetchd keeps its state in /var/lib/fetchd")

        // What fetchd writes to stderr reaches the journal, under its unit.
        var messages: [String] = []
        let logged = try await eventually(timeoutSeconds: 5) {
            messages = try await namespace.journalMessages(unit: "fetchd.service")
            return messages.contains { $0.contains("clock") && $0.contains("newData") }
        }
        #expect(logged, "journal of fetchd.service:\n\(messages.joined(separator: "\n"))")

        // fetchctl inside the namespace reaches the daemon through its socket in /run/fetchd.
        let status = try await namespace.run([Self.binDirectory + "/fetchctl", "status", "--socket", "/run/fetchd/control.sock"])
        #expect(status.status == 0 && status.stdout.contains("clock"), "\(status)")

        // SIGTERM from systemctl stop: a clean, prompt exit.
        let stopping = Date()
        let stop = try await namespace.run(["systemctl", "stop", "fetchd.service"], timeoutSeconds: 15)
        let stopSeconds = Date().timeIntervalSince(stopping)
        #expect(stop.status == 0, "\(stop)")
        #expect(stopSeconds < 10, "systemctl stop took \(stopSeconds) s")
        let active = try await namespace.run(["systemctl", "is-active", "fetchd.service"])
        let stopLog = await log()
        #expect(active.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "inactive", "\(active)\n\(stopLog)")
        #expect(try await namespace.property("Result", of: "fetchd.service") == "success", "\(stopLog)")
        print("fetchd under systemd: stop took \(String(format: "%.2f", stopSeconds)) s")
    }
}
}
