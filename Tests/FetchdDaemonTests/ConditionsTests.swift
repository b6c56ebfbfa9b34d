import FetchdConfig
import FetchdCore
@testable import FetchdDaemon
import FetchdTestSupport
import Foundation
import Testing

/// The conditions (`network`, `power`, `battery_min`): reading the power supplies, the reasons a
/// handler waits, and a coordinator deferring a due handler and running it when the power returns.
struct ConditionsTests {
    private func handler(_ network: HandlerConfig.NetworkCondition = .any, power: HandlerConfig.PowerCondition = .any,
                         batteryMin: Int = 0, url: String? = nil) -> HandlerConfig {
        var handler = HandlerConfig(name: "h", options: url.map { .http(HTTPOptions(url: $0)) } ?? .doNothing)
        handler.network = network
        handler.power = power
        handler.batteryMinPercent = batteryMin
        return handler
    }

    @Test func powerSuppliesAreRead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let supplies = try FakePowerSupplies(directory)
        #expect(PowerState.read(from: directory.file("missing")) == PowerState(onAC: true, batteryPercent: nil))
        #expect(PowerState.read(from: supplies.path) == PowerState(onAC: true, batteryPercent: nil), "a desktop")
        try supplies.set("AC", ["type": "Mains", "online": "0"])
        try supplies.set("BAT0", ["type": "Battery", "capacity": "64", "status": "Discharging"])
        try supplies.set("BAT1", ["type": "Battery", "capacity": "12", "status": "Discharging"])
        try supplies.set("hidpp_battery_0", ["type": "Battery", "capacity": "3", "scope": "Device"])
        #expect(PowerState.read(from: supplies.path) == PowerState(onAC: false, batteryPercent: 12),
                "the lowest system battery; a mouse's battery does not count")
        try supplies.set("ucsi-source-psy-USBC000:001", ["type": "USB", "online": "1"])
        #expect(PowerState.read(from: supplies.path).onAC, "a USB-C charger is AC power")
    }

    @Test func aBatteryWithoutAnACSupplyIsOnACUnlessDischarging() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let supplies = try FakePowerSupplies(directory)
        try supplies.set("BAT0", ["type": "Battery", "capacity": "80", "status": "Charging"])
        #expect(PowerState.read(from: supplies.path) == PowerState(onAC: true, batteryPercent: 80))
        try supplies.set("BAT0", ["status": "Discharging"])
        #expect(PowerState.read(from: supplies.path).onAC == false)
    }

    @Test func reasonsSayWhatIsAwaited() {
        let battery = PowerState(onAC: false, batteryPercent: 12)
        let unmetered = NetworkState.networkManager(metered: 2, connectivity: 4)
        let metered = NetworkState.networkManager(metered: 3, connectivity: 4)  // guess-yes counts
        let offline = NetworkState.networkManager(metered: 0, connectivity: 1)
        #expect(ConditionCheck.unmet(handler(), power: battery, network: offline) == nil, "an exec handler needs nothing")
        #expect(ConditionCheck.unmet(handler(power: .ac), power: battery, network: unmetered) == "waiting for AC power")
        #expect(ConditionCheck.unmet(handler(power: .ac), power: PowerState(), network: unmetered) == nil)
        #expect(ConditionCheck.unmet(handler(batteryMin: 30), power: battery, network: unmetered)
                == "waiting for battery >= 30 % (now 12 %)")
        #expect(ConditionCheck.unmet(handler(batteryMin: 30), power: PowerState(onAC: true, batteryPercent: 12),
                                     network: unmetered) == nil, "on AC the charge does not matter")
        #expect(ConditionCheck.unmet(handler(.unmetered), power: battery, network: metered)
                == "waiting for an unmetered network (NetworkManager: metered)")
        #expect(ConditionCheck.unmet(handler(.unmetered), power: battery, network: .setting(metered: true))
                == "waiting for an unmetered network (network_metered = true)")
        #expect(ConditionCheck.unmet(handler(.unmetered), power: battery, network: .networkManager(metered: 0, connectivity: 4)) == nil,
                "unknown counts as unmetered")
        #expect(ConditionCheck.unmet(handler(url: "https://example.org/"), power: battery, network: offline)?
            .hasPrefix("offline") == true)
        #expect(ConditionCheck.unmet(handler(url: "http://127.0.0.1:8080/"), power: battery, network: offline) == nil,
                "loopback works offline")
        #expect(ConditionCheck.unmet(handler(url: "file:///etc/os-release"), power: battery, network: offline) == nil)
        #expect(ConditionCheck.unmet(handler(.unmetered, power: .ac), power: battery, network: metered)
                == "waiting for an unmetered network (NetworkManager: metered); waiting for AC power")
    }

    /// A due handler on battery is deferred (no fetch, a reason in the status, no wake asked for
    /// it), stays due, and runs at the first wake after AC power returns.
    @Test func aDeferredHandlerRunsAtTheFirstWakeOnAC() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let supplies = try FakePowerSupplies(directory)
        try supplies.set("AC", ["type": "Mains", "online": "0"])
        let coordinator = try TestConfig.coordinator(in: directory, main: """
            heartbeat = "10m"
            power_supply_dir = "\(supplies.path)"
            """, handlers: """
            [[handler]]
            name = "backup"
            kind = "exec"
            command = ["/bin/sh", "-c", "echo ok > \\"$FETCHD_OUTPUT\\""]
            min_interval = "1h"
            power = "ac"
            """)
        let now = Date()
        #expect(await coordinator.runDue(now: now).isEmpty)
        let status = await coordinator.status(markSeen: false)
        #expect(status.handlers.first?.waitingFor == "waiting for AC power")
        #expect(await coordinator.wakePlan(now: now).wakeAt > now.addingTimeInterval(60), "a deferred handler asked for a wake now")
        #expect(await coordinator.runDue(now: now).isEmpty, "still on battery")

        try supplies.set("AC", ["online": "1"])
        let records = await coordinator.runDue(now: Date())
        #expect(records.map(\.handler) == ["backup"] && records.first?.result == .newData, "\(records)")
        #expect(await coordinator.status(markSeen: false).handlers.first?.waitingFor == nil)
    }

    @Test func aManualFetchRunsWhateverTheConditions() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let supplies = try FakePowerSupplies(directory)
        try supplies.set("AC", ["type": "Mains", "online": "0"])
        let coordinator = try TestConfig.coordinator(in: directory, main: "power_supply_dir = \"\(supplies.path)\"",
                                                     handlers: """
            [[handler]]
            name = "backup"
            kind = "exec"
            command = ["/bin/sh", "-c", "echo ok > \\"$FETCHD_OUTPUT\\""]
            power = "ac"
            network = "unmetered"
            """)
        let record = await coordinator.fetch("backup", trigger: .manual)
        #expect(record?.result == .newData, "\(String(describing: record))")
    }
}
