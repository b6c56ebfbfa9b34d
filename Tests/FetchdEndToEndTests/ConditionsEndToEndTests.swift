import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// Conditions end to end: the real fetchd on a fake power supply tree and on a private
/// dbus-daemon standing in for the system bus, with a fake NetworkManager. The heartbeat is an
/// hour, so a deferred handler that runs did so because a change of conditions woke the
/// scheduler. These tests wait on processes, never block a thread of the shared pool, and assert
/// no durations.
@Suite(.serialized)
struct ConditionsEndToEndTests {
    /// fetchd's network watcher installs two match rules: NameOwnerChanged and PropertiesChanged.
    static let watcherMatches = 2

    static func handler(_ name: String, _ conditions: String) -> String {
        """
        [[handler]]
        name = "\(name)"
        kind = "exec"
        command = ["/bin/sh", "-c", "echo \(name) > \\"$FETCHD_OUTPUT\\""]
        min_interval = "1h"
        \(conditions)

        """
    }

    private func fetches(_ state: StateStore, _ handler: String) -> Int {
        ((try? state.history(of: handler, limit: 10)) ?? []).count
    }

    /// Writes an attribute in place, as the kernel changes a sysfs value (no rename).
    private func write(_ value: String, to path: String) throws {
        try (value + "\n").write(toFile: path, atomically: false, encoding: .utf8)
    }

    private func status(_ daemon: DaemonProcess) async throws -> String {
        try await daemon.fetchctlWithoutBlocking(["status", "--peek"]).output
    }

    @Test func powerConditionsDeferAndAChangeOfPowerRunsThem() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let supplies = try FakePowerSupplies(directory)
        try supplies.set("AC", ["type": "Mains", "online": "0"])
        try supplies.set("BAT0", ["type": "Battery", "capacity": "12", "status": "Discharging"])
        let daemon = try DaemonProcess(
            handlers: Self.handler("backup", "power = \"ac\"") + Self.handler("sync", "battery_min = 30")
                + Self.handler("big", "network = \"unmetered\""),
            heartbeat: "1h", extraMain: "power_supply_dir = \"\(supplies.path)\"\nnetwork_metered = true")
        // No bus at all: network_metered decides.
        try await daemon.start(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(directory.file("no_bus"))"])
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))

        var text = ""
        #expect(try await eventually(timeoutSeconds: 20, pollMilliseconds: 300) { text = try await status(daemon); return text.contains("sync: waiting") }, "\(text)")
        #expect(text.contains("  backup: waiting for AC power"), "\(text)")
        #expect(text.contains("  sync: waiting for battery >= 30 % (now 12 %)"), "\(text)")
        #expect(text.contains("  big: waiting for an unmetered network (network_metered = true)"), "\(text)")
        #expect(fetches(state, "backup") == 0 && fetches(state, "sync") == 0 && fetches(state, "big") == 0)

        // The battery charges past 30 %: sync runs, on a wake the change itself caused.
        try write("40", to: supplies.path + "/BAT0/capacity")
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "sync") == 1 }, "the battery change did not wake sync")
        #expect(fetches(state, "backup") == 0, "backup ran on battery")

        // AC comes back: backup runs.
        try write("1", to: supplies.path + "/AC/online")
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "backup") == 1 }, "AC power did not wake backup")

        // A manual fetch runs whatever the conditions; the deferred handler still waits.
        #expect(try await daemon.fetchctlWithoutBlocking(["fetch", "big", "--wait"]).status == 0)
        #expect(fetches(state, "big") == 1)
        text = try await status(daemon)
        #expect(!text.contains("backup: waiting") && !text.contains("sync: waiting"), "\(text)")

        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
        #expect(log.contains("backup: waiting for AC power"), "\(log)")
        #expect(log.contains("backup: conditions hold again"), "\(log)")
    }

    @Test func networkManagerDefersAndItsSignalResumesButNoOneElseCan() async throws {
        let daemon = try DaemonProcess(handlers: Self.handler("big", "network = \"unmetered\""),
                                       heartbeat: "1h", extraMain: "network_metered = true")
        let bus = PrivateBus(socketPath: daemon.directory.file("system_bus_socket"))
        try await bus.start()
        let manager = try await FakeNetworkManager(address: bus.address, metered: 1, connectivity: 4)
        try await daemon.start(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        #expect(try await manager.waitForMatches(atLeast: Self.watcherMatches), "fetchd never followed NetworkManager")

        var text = ""
        let metered = "big: waiting for an unmetered network (NetworkManager: metered)"
        #expect(try await eventually(timeoutSeconds: 20, pollMilliseconds: 300) { text = try await status(daemon); return text.contains(metered) }, "\(text)")

        // A connection that does not own NetworkManager's name says "not metered": ignored.
        try await manager.send("forge 2")
        try await Task.sleep(for: .seconds(1))
        #expect(fetches(state, "big") == 0, "a forged signal made the handler run")
        #expect(try await status(daemon).contains(metered))

        // Offline, then unmetered but still offline: still deferred, and the status says why.
        try await manager.send("connectivity 1")
        try await manager.send("metered 4")  // guess-no: unmetered
        #expect(try await eventually(timeoutSeconds: 20, pollMilliseconds: 300) { text = try await status(daemon); return text.contains("big: offline") }, "\(text)")
        #expect(fetches(state, "big") == 0)

        // Back online: NetworkManager's signal runs the handler without waiting for the heartbeat.
        try await manager.send("connectivity 4")
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "big") == 1 }, "the signal did not wake the handler")
        text = try await status(daemon)
        #expect(!text.contains("big: "), "\(text)")

        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
        #expect(log.contains("network: following NetworkManager on the system bus"), "\(log)")
    }
}
