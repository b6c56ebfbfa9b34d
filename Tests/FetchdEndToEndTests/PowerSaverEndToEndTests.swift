import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// Power-saver end to end: the real fetchd on a private dbus-daemon standing in for the system
/// bus, with a fake power-profiles-daemon under 0.12's name, 0.20's, or both; and a critically
/// low battery on a fake power supply tree. The heartbeat is an hour, so a deferred handler that
/// runs did so because a change woke the scheduler. These tests wait on processes, never block
/// a thread of the shared pool, and assert no durations.
@Suite(.serialized)
struct PowerSaverEndToEndTests {
    /// fetchd's power-profile watcher installs four match rules: NameOwnerChanged and
    /// PropertiesChanged for each of the two names.
    static let watcherMatches = 4
    /// The start of the wait's words, in the status and the journal.
    static let waiting = "waiting for the power profile to leave power-saver"

    /// A handler only asked for at first: it makes fetchd follow the power profile (its
    /// `power_saver` is the default, "defer") without any scheduled fetch racing the watcher.
    static let placeholder = """
        [[handler]]
        name = "placeholder"
        kind = "exec"
        command = ["/bin/true"]
        min_interval = "never"

        """

    /// The handlers under test, due at once: two defer in power-saver, one runs anyway.
    static let handlers = ConditionsEndToEndTests.handler("feed", "") + ConditionsEndToEndTests.handler("mail", "")
        + ConditionsEndToEndTests.handler("chat", "power_saver = \"run\"")

    private func fetches(_ state: StateStore, _ handler: String) -> Int {
        ((try? state.history(of: handler, limit: 10)) ?? []).count
    }

    private func status(_ daemon: DaemonProcess, _ arguments: [String] = []) async throws -> String {
        try await daemon.fetchctlWithoutBlocking(["status", "--peek"] + arguments).output
    }

    /// A daemon on `bus` following power-profiles-daemon, then given `handlers` by a reload:
    /// their first wake knows the profile.
    private func daemonFollowing(_ profiles: FakePowerProfiles, on bus: PrivateBus, in daemon: DaemonProcess) async throws {
        try await daemon.start(arguments: ["--log-level", "debug"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        #expect(try await profiles.waitForMatches(atLeast: Self.watcherMatches), "fetchd never followed power-profiles-daemon")
        _ = await eventually(timeoutSeconds: 20, pollMilliseconds: 200) { daemon.logSoFar().contains("power profile: following") }
        try daemon.directory.write(Self.placeholder + Self.handlers, to: "etc/handlers.d/test.toml")
        #expect(try await daemon.fetchctlWithoutBlocking(["reload"]).status == 0)
    }

    private func session(_ mode: String) async throws -> (DaemonProcess, PrivateBus, FakePowerProfiles, StateStore) {
        let daemon = try DaemonProcess(handlers: Self.placeholder, heartbeat: "1h")
        let bus = PrivateBus(socketPath: daemon.directory.file("system_bus_socket"))
        try await bus.start()
        let profiles = try await FakePowerProfiles(address: bus.address, mode: mode, profile: "power-saver")
        try await daemonFollowing(profiles, on: bus, in: daemon)
        return (daemon, bus, profiles, try StateStore(path: daemon.directory.file("state/state.sqlite")))
    }

    /// 0.20 owns both names and signals each change at both paths: the change counts once, and
    /// leaving power-saver starts every deferred fetch in one wake.
    @Test(arguments: ["new", "both"])
    func powerSaverDefersAndLeavingItStartsTheDeferredFetchesInOneWake(mode: String) async throws {
        let (daemon, bus, profiles, state) = try await session(mode)
        _ = bus
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "chat") == 1 }, "power_saver = \"run\" did not run")
        var text = ""
        #expect(try await eventually(timeoutSeconds: 20, pollMilliseconds: 300) { text = try await status(daemon); return text.contains("mail: \(Self.waiting)") }, "\(text)")
        #expect(text.contains("  feed: \(Self.waiting) (power_saver = \"defer\")"), "\(text)")
        #expect(try await status(daemon, ["feed"]).contains("power-saver"))
        #expect(fetches(state, "feed") == 0 && fetches(state, "mail") == 0)

        try await profiles.send("profile balanced")
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "feed") == 1 && fetches(state, "mail") == 1 },
                "leaving power-saver did not start the deferred fetches")
        try await Task.sleep(for: .seconds(1))
        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
        #expect(log.contains("feed: \(Self.waiting)") && log.contains("feed: conditions hold again: fetching"), "\(log)")
        #expect(log.components(separatedBy: "power profile: balanced").count == 2, "the change counted once: \(log)")
        let afterChange = log.components(separatedBy: "power profile: balanced").last ?? ""
        #expect(afterChange.components(separatedBy: "wake: conditions").count == 2, "one wake for the change: \(log)")
        #expect(log.contains("wake: 2 handler(s) due: feed, mail"), "both deferred fetches in one wake: \(log)")
    }

    /// 0.12's name alone; a manual fetch runs in power-saver; the name going away lifts the
    /// hold, and coming back in power-saver is followed again.
    @Test func theOldNameIsFollowedThroughItsGoingAndComing() async throws {
        let (daemon, bus, profiles, state) = try await session("old")
        _ = bus
        var text = ""
        #expect(try await eventually(timeoutSeconds: 20, pollMilliseconds: 300) { text = try await status(daemon); return text.contains("feed: \(Self.waiting)") }, "\(text)")
        #expect(try await daemon.fetchctlWithoutBlocking(["fetch", "mail", "--wait"]).status == 0, "a manual fetch runs in power-saver")
        #expect(fetches(state, "mail") == 1 && fetches(state, "feed") == 0)

        try await profiles.send("release")
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "feed") == 1 }, "power-profiles-daemon gone: nothing should wait")
        try await profiles.send("own")
        #expect(await eventually(timeoutSeconds: 20, pollMilliseconds: 200) {
            daemon.logSoFar().components(separatedBy: "power profile: following").count == 3
        }, "not followed again after coming back")
        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
        #expect(log.contains("power-profiles-daemon is not on the system bus"), "\(log)")
        #expect(log.components(separatedBy: "power profile: power-saver").count == 3, "\(log)")
    }

    /// The system bus going away lifts the hold (no one says the profile any more); when it
    /// comes back, fetchd reconnects by itself and follows power-saver again.
    @Test func theBusGoingAwayAndComingBackIsFollowed() async throws {
        let (daemon, bus, profiles, state) = try await session("new")
        var text = ""
        #expect(try await eventually(timeoutSeconds: 20, pollMilliseconds: 300) { text = try await status(daemon); return text.contains("feed: \(Self.waiting)") }, "\(text)")
        _ = profiles
        await bus.stop()
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "feed") == 1 }, "the bus gone: nothing should wait")
        try await bus.start()
        let again = try await FakePowerProfiles(address: bus.address, mode: "new", profile: "power-saver")
        #expect(try await again.waitForMatches(atLeast: Self.watcherMatches), "fetchd did not reconnect")
        #expect(await eventually(timeoutSeconds: 20, pollMilliseconds: 200) {
            daemon.logSoFar().components(separatedBy: "power profile: power-saver").count == 3
        }, "power-saver not followed again after the bus came back")
        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
        #expect(log.contains("power profile: the system bus connection closed"), "\(log)")
    }

    /// Started without a system bus, fetchd sets no timer to look for one: it waits for the
    /// socket to appear, then follows power-profiles-daemon at once.
    @Test func withoutABusItWaitsForTheSocketAndFollowsWhenItComes() async throws {
        let daemon = try DaemonProcess(handlers: Self.placeholder + Self.handlers, heartbeat: "1h")
        let bus = PrivateBus(socketPath: daemon.directory.file("system_bus_socket"))
        try await daemon.start(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "feed") == 1 }, "without a bus nothing should wait")
        #expect(await eventually(timeoutSeconds: 20, pollMilliseconds: 200) {
            daemon.logSoFar().contains("waiting for its socket to appear")
        }, "\(daemon.logSoFar())")
        try await bus.start()
        let profiles = try await FakePowerProfiles(address: bus.address, mode: "old", profile: "power-saver")
        #expect(try await profiles.waitForMatches(atLeast: Self.watcherMatches), "fetchd did not connect when the bus came")
        #expect(await eventually(timeoutSeconds: 20, pollMilliseconds: 200) {
            daemon.logSoFar().contains("power profile: power-saver")
        }, "\(daemon.logSoFar())")
        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
        #expect(log.components(separatedBy: "power profile: cannot follow").count == 2, "one line for the outage: \(log)")
    }

    /// Started in power-saver: the first wake waits for the profile (`StartGate`), so the
    /// handlers due at start are held back, not run before the profile is read.
    @Test func startingInPowerSaverHoldsTheFirstWake() async throws {
        let daemon = try DaemonProcess(handlers: Self.handlers, heartbeat: "1h")
        let bus = PrivateBus(socketPath: daemon.directory.file("system_bus_socket"))
        try await bus.start()
        let profiles = try await FakePowerProfiles(address: bus.address, mode: "both", profile: "power-saver")
        try await daemon.start(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "chat") == 1 }, "the first wake did not run")
        var text = ""
        #expect(try await eventually(timeoutSeconds: 20, pollMilliseconds: 300) { text = try await status(daemon); return text.contains("feed: \(Self.waiting)") }, "\(text)")
        #expect(fetches(state, "feed") == 0 && fetches(state, "mail") == 0, "a due fetch ran before the profile was read")
        try await profiles.send("profile performance")
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "feed") == 1 && fetches(state, "mail") == 1 })
        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
    }

    /// Every battery discharging at 4 %: every scheduled fetch waits, `power_saver = "run"`
    /// included, with no power-profiles-daemon at all; the battery's change runs it.
    @Test func aCriticallyLowBatteryHoldsEveryScheduledFetch() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let supplies = try FakePowerSupplies(directory)
        try supplies.set("BAT0", ["type": "Battery", "capacity": "4", "status": "Discharging"])
        let daemon = try DaemonProcess(handlers: ConditionsEndToEndTests.handler("chat", "power_saver = \"run\""),
                                       heartbeat: "1h", extraMain: "power_supply_dir = \"\(supplies.path)\"")
        try await daemon.start(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(directory.file("no_bus"))"])
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        var text = ""
        let words = "chat: waiting for the battery: critically low (4 %, every battery discharging)"
        #expect(try await eventually(timeoutSeconds: 20, pollMilliseconds: 300) { text = try await status(daemon); return text.contains(words) }, "\(text)")
        #expect(try await status(daemon, ["chat"]).contains("battery-critical"))
        #expect(fetches(state, "chat") == 0)

        try "7\n".write(toFile: supplies.path + "/BAT0/capacity", atomically: false, encoding: .utf8)
        #expect(await waitUntil(timeoutSeconds: 20) { fetches(state, "chat") == 1 }, "the battery's change did not wake chat")
        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
        #expect(log.contains(words), "\(log)")
    }
}
