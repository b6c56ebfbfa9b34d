import FetchdConfig
import FetchdControl
import FetchdCore
@testable import FetchdDaemon
import FetchdTestSupport
import Foundation
import Testing

/// Power-saver and a critically low battery: the eligibility computation holding scheduled
/// fetches back (inputs built by hand), the power supplies read as critical or not, and a
/// coordinator whose status, wake and manual fetch agree.
struct PowerSaverTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func handler(_ name: String, powerSaver: HandlerConfig.PowerSaverPolicy = .deferFetch,
                         every seconds: Double? = 60) -> HandlerConfig {
        var handler = HandlerConfig(name: name, options: .doNothing)
        handler.minInterval = seconds.map { .seconds($0) } ?? .never
        handler.powerSaver = powerSaver
        return handler
    }

    private func names(_ indices: [Int], _ input: EligibilityInput) -> [String] { indices.map { input.handlers[$0].name } }

    static let powerSaverWords = "waiting for the power profile to leave power-saver (power_saver = \"defer\")"
    static let criticalWords = "waiting for the battery: critically low (4 %, every battery discharging)"

    @Test func powerSaverDefersTheHandlersThatSayDeferAndNoOthers() {
        var input = EligibilityInput(now: now, handlers: [handler("feed"), handler("chat", powerSaver: .run),
                                                          handler("asked", every: nil)], heartbeatSeconds: 3600)
        #expect(names(Eligibility(input).ready, input) == ["feed", "chat"], "not in power-saver: both run")
        input.powerSaver = true
        let eligibility = Eligibility(input)
        #expect(names(eligibility.ready, input) == ["chat"])
        #expect(eligibility.deferred.map { input.handlers[$0.index].name } == ["feed"])
        #expect(eligibility.deferred.first?.reason == Self.powerSaverWords, "the journal's words")
        let row = eligibility.row(of: input.handlers[0])
        #expect(row.holds == [.powerSaver] && row.waitingFor == Self.powerSaverWords)
        #expect(eligibility.row(of: input.handlers[1]).holds.isEmpty)
        #expect(eligibility.row(of: input.handlers[2]).holds == [.onRequestOnly], "on request only: nothing to defer")
        let report = HoldReport(.powerSaver, of: input.handlers[0])
        #expect(report.cause == .powerSaver && report.cause.rawValue == "power-saver" && report.until == nil)
        #expect(report.detail == Self.powerSaverWords + " (fetchctl fetch still runs it)")
    }

    /// A partial transfer whose retry time has come resumes at a wake whatever its min_interval;
    /// power-saver defers that resume, and its status says so in the same words.
    @Test func aResumingTransferOnRequestOnlyIsHeldAndSaysWhy() {
        var input = EligibilityInput(now: now, handlers: [handler("iso", every: nil)], heartbeatSeconds: 3600)
        input.transferResumes = ["iso": now.addingTimeInterval(-1)]
        input.powerSaver = true
        let eligibility = Eligibility(input)
        #expect(eligibility.ready.isEmpty && eligibility.deferred.map(\.reason) == [Self.powerSaverWords])
        let row = eligibility.row(of: input.handlers[0])
        #expect(row.holds.contains(.powerSaver) && row.waitingFor == Self.powerSaverWords, "\(row.holds)")
    }

    @Test func aDeferredHandlerAsksForNoWakeItsProfileChangeWakesIt() {
        var input = EligibilityInput(now: now, handlers: [handler("feed")], heartbeatSeconds: 3600)
        input.powerSaver = true
        #expect(Eligibility(input).next == nil, "no timer for a fetch only a change of profile may start")
        #expect(Eligibility(input).nextWake == now.addingTimeInterval(3600))
        input.powerSaver = false
        #expect(Eligibility(input).ready == [0])
    }

    @Test func aCriticalBatteryHoldsEveryScheduledFetchWhateverItsKeys() {
        var input = EligibilityInput(now: now, handlers: [handler("feed"), handler("chat", powerSaver: .run)],
                                     heartbeatSeconds: 3600)
        input.criticalBatteryPercent = 4
        input.unmetConditions = ["feed": "waiting for AC power"]
        let eligibility = Eligibility(input)
        #expect(eligibility.ready.isEmpty)
        #expect(eligibility.deferred.map(\.reason) == ["waiting for AC power; " + Self.criticalWords, Self.criticalWords])
        #expect(eligibility.row(of: input.handlers[1]).holds == [.batteryCritical(percent: 4)])
        #expect(eligibility.next == nil)
        let report = HoldReport(.batteryCritical(percent: 4), of: input.handlers[1])
        #expect(report.cause.rawValue == "battery-critical" && report.detail.hasPrefix(Self.criticalWords))
    }

    @Test func criticallyLowIsEveryBatteryDischargingAtFivePercentOrLess() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let supplies = try FakePowerSupplies(directory)
        #expect(!PowerState.read(from: supplies.path).criticallyLow, "a desktop")
        try supplies.set("AC", ["type": "Mains", "online": "0"])
        try supplies.set("BAT0", ["type": "Battery", "capacity": "5", "status": "Discharging"])
        try supplies.set("hidpp_battery_0", ["type": "Battery", "capacity": "80", "scope": "Device"])
        #expect(PowerState.read(from: supplies.path) == PowerState(onAC: false, batteryPercent: 5, criticallyLow: true),
                "systemd's level: 5 % counts; a mouse's battery does not")
        try supplies.set("BAT1", ["type": "Battery", "capacity": "40", "status": "Discharging"])
        #expect(!PowerState.read(from: supplies.path).criticallyLow, "a battery above 5 % still powers the machine")
        try supplies.set("BAT1", ["capacity": "3", "status": "Charging"])
        #expect(!PowerState.read(from: supplies.path).criticallyLow, "one battery charging")
        try supplies.set("BAT1", ["capacity": "unknown", "status": "Discharging"])
        #expect(!PowerState.read(from: supplies.path).criticallyLow, "a charge that cannot be read is not guessed low")
        try supplies.set("BAT1", ["capacity": "2"])
        #expect(PowerState.read(from: supplies.path).criticallyLow)
        try supplies.set("AC", ["online": "1"])
        #expect(!PowerState.read(from: supplies.path).criticallyLow, "on AC")
    }

    private static let exec = """
        [[handler]]
        name = "h"
        kind = "exec"
        command = ["/bin/sh", "-c", "echo 1 > \\"$FETCHD_OUTPUT\\""]
        min_interval = "1h"

        """

    /// The status names the hold, the wake holds the handler back, leaving power-saver makes
    /// the next wake fetch it, and a manual fetch runs it in power-saver.
    @Test func theStatusTheWakeAndAManualFetchAgreeInPowerSaver() async throws {
        let directory = try TemporaryDirectory("power-saver")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, handlers: Self.exec + Self.exec.replacingOccurrences(
            of: "name = \"h\"", with: "name = \"r\"\npower_saver = \"run\""))
        #expect(await coordinator.setPowerProfile("power-saver"))
        #expect(!(await coordinator.setPowerProfile("power-saver")), "the same profile again changes nothing")
        let holds = try #require(await coordinator.status(of: "h")?.handlers.first?.holds)
        #expect(holds.map(\.cause) == [.powerSaver], "\(holds)")
        #expect(await coordinator.status(markSeen: false).handlers.first { $0.name == "h" }?.waitingFor == Self.powerSaverWords)
        #expect(await coordinator.runDue(now: Date()).map(\.handler) == ["r"], "power_saver = \"run\" runs anyway")
        #expect(await coordinator.runDue(now: Date()).isEmpty, "h stays deferred")
        #expect(await coordinator.setPowerProfile("balanced"))
        #expect(await coordinator.runDue(now: Date()).map(\.handler) == ["h"], "leaving power-saver, the next wake fetches it")
        #expect(await coordinator.setPowerProfile("power-saver"))
        let manual = await coordinator.fetch("h", trigger: .manual)
        #expect(manual?.trigger == .manual && manual?.result.isFailure == false, "a manual fetch runs in power-saver")
        #expect(await coordinator.setPowerProfile(nil), "power-profiles-daemon gone: nothing waits for power-saver")
    }

    /// A running transfer pauses for what its scheduled fetch would wait for, in the same words.
    @Test func aRunningTransferWouldPauseForPowerSaverInTheWordsOfTheWait() async throws {
        let directory = try TemporaryDirectory("power-saver-transfer")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, handlers: Self.exec + Self.exec.replacingOccurrences(
            of: "name = \"h\"", with: "name = \"r\"\npower_saver = \"run\""))
        let h = try #require(await coordinator.config.handler(named: "h"))
        let r = try #require(await coordinator.config.handler(named: "r"))
        #expect(await coordinator.scheduledWait(h) == nil)
        await coordinator.setPowerProfile("power-saver")
        #expect(await coordinator.scheduledWait(h) == Self.powerSaverWords)
        #expect(await coordinator.scheduledWait(r) == nil)
    }

    @Test func aCriticalBatteryShowsInTheStatusAndHoldsTheWake() async throws {
        let directory = try TemporaryDirectory("why-critical")
        defer { directory.remove() }
        let supplies = try FakePowerSupplies(directory)
        try supplies.set("BAT0", ["type": "Battery", "capacity": "4", "status": "Discharging"])
        let coordinator = try TestConfig.coordinator(in: directory, main: "power_supply_dir = \"\(supplies.path)\"",
                                                     handlers: Self.exec + "power_saver = \"run\"\n")
        let holds = try #require(await coordinator.status(of: "h")?.handlers.first?.holds)
        #expect(holds.map(\.cause) == [.batteryCritical], "\(holds)")
        #expect(await coordinator.runDue(now: Date()).isEmpty)
        try supplies.set("BAT0", ["capacity": "6"])
        #expect(await coordinator.runDue(now: Date()).map(\.handler) == ["h"])
    }
}
