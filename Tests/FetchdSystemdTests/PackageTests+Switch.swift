import FetchdTestSupport
import Foundation
import Testing

/// fetchd.target, the one switch: off, nothing starts fetchd again (not its control socket, not
/// a timer, not a D-Bus call); on, everything is back.
extension SystemdTests.PackageTests {
    /// The units fetchd.target turns off and on together.
    static let switchedUnits = ["fetchd.service", "fetchd.socket", "fetchd-runas.socket", "fetchd-wake.timer"]

    /// `systemctl disable --now fetchd.target`, then what would start fetchd: a fetchctl call
    /// (the control socket), the heartbeat's service, a planned timer left from before and a
    /// D-Bus call; then `systemctl enable --now fetchd.target`.
    func theSwitchTurnsEverythingOffAndOn(_ namespace: SystemdNamespace) async throws {
        try await namespace.check(["systemctl", "start", "fetchd-planned@4102444800.timer"])
        try await namespace.check(["systemctl", "disable", "--now", "fetchd.target"])
        for unit in ["fetchd.target", "fetchd-planned@4102444800.timer"] + Self.switchedUnits {
            #expect(try await namespace.property("ActiveState", of: unit) == "inactive", "\(unit) after disable --now")
        }
        for unit in ["fetchd.target"] + Self.switchedUnits {
            #expect(try await namespace.property("UnitFileState", of: unit) == "disabled", "\(unit) after disable --now")
        }
        let control = try await namespace.run(["fetchctl", "status"])
        #expect(control.status != 0, "fetchctl reached a fetchd that was turned off: \(control)")
        // The wake service fails (no socket to ask) and starts nothing; its failure is forgotten.
        _ = try await namespace.run(["systemctl", "start", "fetchd-wake.service"])
        _ = try await namespace.run(["systemctl", "reset-failed", "fetchd-wake.service"])
        let bus = try await Self.callTheBus(namespace)
        #expect(bus.status != 0, "a D-Bus call was answered by a fetchd that was turned off: \(bus)")
        try await Task.sleep(for: .seconds(2))
        #expect(try await namespace.property("ActiveState", of: "fetchd.service") == "inactive",
                "fetchd started again after disable --now")

        try await namespace.check(["systemctl", "enable", "--now", "fetchd.target"])
        for unit in ["fetchd.target"] + Self.switchedUnits {
            #expect(try await namespace.property("ActiveState", of: unit) == "active", "\(unit) after enable --now")
            #expect(try await namespace.property("UnitFileState", of: unit) == "enabled", "\(unit) after enable --now")
        }
        #expect(try await eventually(timeoutSeconds: 20) { try await namespace.run(["fetchctl", "status"]).status == 0 })
        if try await namespace.property("ActiveState", of: "dbus.service") == "active" {
            var answer = SystemdNamespace.Output(status: -1, stdout: "", stderr: "")
            #expect(try await eventually(timeoutSeconds: 20) {
                answer = try await Self.callTheBus(namespace)
                return answer.status == 0
            }, "the D-Bus API did not answer after enable --now: \(answer)")
        }
    }

    /// `ListHandlers` on the system bus, as root.
    static func callTheBus(_ namespace: SystemdNamespace) async throws -> SystemdNamespace.Output {
        try await namespace.run(["busctl", "--system", "--timeout=5", "call", "org.fetchd.Fetchd1", "/org/fetchd/Fetchd1",
                                 "org.fetchd.Fetchd1", "ListHandlers"], timeoutSeconds: 15)
    }
}
