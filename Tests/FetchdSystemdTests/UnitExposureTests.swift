import Foundation
import Testing

/// `systemd-analyze security --offline` over every shipped service: how much of the system each
/// one could touch if its program were taken over, on systemd's 0 (locked down) to 10 scale.
extension SystemdTests { @Suite struct UnitExposureTests {
    /// The most exposure allowed per shipped service: system units at or under 2.0, but for
    /// fetchd-runas (the privileged part, root with five capabilities) at or under 3.5; the user
    /// daemon at or under 3.0 (what a user manager can set up, docs/security-notes.md), its wake
    /// and planned services at or under 2.0, as their system counterparts. User units are rated
    /// as a user manager runs them (`--user`).
    static let limits: [(unit: String, most: Double)] = [
        ("fetchd.service", 2.0), ("fetchd-wake.service", 2.0), ("fetchd-planned.service", 2.0),
        ("fetchd-runas@.service", 3.5),
        ("user/fetchd.service", 3.0), ("user/fetchd-wake.service", 2.0), ("user/fetchd-planned.service", 2.0),
    ]

    @Test func everyShippedServiceStaysWithinItsExposure() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchd-units-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/user", withIntermediateDirectories: true)
        let shipped = FetchdUnitTests.repository + "/systemd"
        for name in try FileManager.default.contentsOfDirectory(atPath: shipped) where name.hasSuffix(".service") {
            try String(contentsOfFile: shipped + "/" + name, encoding: .utf8).replacingOccurrences(of: "@bindir@", with: "/usr/bin")
                .replacingOccurrences(of: "@libexecdir@", with: "/usr/libexec/fetchd")
                .write(toFile: folder + "/" + name, atomically: true, encoding: .utf8)
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: shipped + "/user") where name.hasSuffix(".service") {
            try String(contentsOfFile: shipped + "/user/" + name, encoding: .utf8).replacingOccurrences(of: "@bindir@", with: "/usr/bin")
                .write(toFile: folder + "/user/" + name, atomically: true, encoding: .utf8)
        }
        // Every shipped service has its limit here: a new one cannot slip in unmeasured.
        let written = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".service") }
            + FileManager.default.contentsOfDirectory(atPath: folder + "/user").map { "user/" + $0 }
        #expect(Set(written) == Set(Self.limits.map(\.unit)), "\(written)")
        for (unit, most) in Self.limits {
            let directory = folder + (unit.hasPrefix("user/") ? "/user" : "")
            let name = unit.replacingOccurrences(of: "user/", with: "")
            let (level, output) = try await Self.exposure(of: name, in: directory, user: unit.hasPrefix("user/"))
            #expect(level != nil && level! <= most, "\(unit): \(output) (at most \(most))")
        }
    }

    /// docs/threat-model.md names as protected exactly what fetchd.service protects: each
    /// `Protect…=` the unit sets to `no` is absent from the threat model's list, and each the
    /// list names is set to `yes` (systemd's default is `no`: a line deleted protects nothing).
    @Test func theThreatModelClaimsOnlyWhatTheUnitProtects() throws {
        let unit = try String(contentsOfFile: FetchdUnitTests.repository + "/systemd/fetchd.service", encoding: .utf8)
        let model = try String(contentsOfFile: FetchdUnitTests.repository + "/docs/threat-model.md", encoding: .utf8)
            .replacingOccurrences(of: "\n", with: " ")
        let claim = try #require(model.firstMatch(of: /, the (kernel[^.]*?) protected/)?.output.1, "the threat model's list")
        for (setting, words) in [("ProtectControlGroups", "control groups"), ("ProtectClock", "clock"),
                                 ("ProtectHostname", "hostname"), ("ProtectKernelTunables", "kernel")] {
            if unit.contains("\n\(setting)=no") {
                #expect(!claim.contains(words), "docs/threat-model.md says \(words) are protected; fetchd.service sets \(setting)=no")
            }
            if claim.contains(words) {
                #expect(unit.contains("\n\(setting)=yes"), "docs/threat-model.md says \(words) are protected; fetchd.service does not set \(setting)=yes")
            }
        }
    }

    /// `systemd-analyze security --offline`'s overall level for the unit file `name` in `folder`
    /// (with its drop-ins there), and the line it came from; with `user`, as a user manager's
    /// unit (`--user`, which rates a few settings otherwise: `KeyringMode=` defaults to `inherit`
    /// there). `--user` needs `XDG_RUNTIME_DIR` even offline; `folder` stands in for it.
    static func exposure(of name: String, in folder: String, user: Bool = false) async throws -> (level: Double?, line: String) {
        let output = try await HostProcess.run(HostProcess.tool("sh") ?? "/bin/sh",
                                               ["-c", "cd \"$1\" && XDG_RUNTIME_DIR=\"$1\" systemd-analyze $3 security --offline=true --no-pager \"$2\" | tail -1",
                                                "sh", folder, name, user ? "--user" : ""],
                                               timeoutSeconds: 60)
        // "→ Overall exposure level for fetchd.service: 1.6 OK 🙂"
        let level = output.stdout.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
        return (level, output.stdout)
    }
} }
