import FetchdState
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `session` usage source end to end: the real fetchd on a private dbus-daemon standing in
/// for the system bus (`DBUS_SYSTEM_BUS_ADDRESS`), with a fake logind in Python sending logind's
/// signals. These tests wait on processes, not on the CPU, and never block a thread of the
/// shared pool (timing-sensitive suites run beside them).
@Suite(.serialized)
struct SessionUsageTests {
    /// fetchd's watcher installs four match rules: NameOwnerChanged, Unlock, PropertiesChanged
    /// and PrepareForSleep.
    static let watcherMatches = 4

    /// An exec handler learning from `usage`. It fetches in power-saver too, so only the
    /// session watcher has a reason to be on the bus: the tests count its match rules.
    static func handler(_ name: String, usage: String) -> String {
        """
        [[handler]]
        name = "\(name)"
        kind = "exec"
        command = ["/bin/sh", "-c", "echo \(name) > \\"$FETCHD_OUTPUT\\""]
        min_interval = "1h"
        usage = [\(usage)]
        power_saver = "run"

        """
    }

    private func uses(_ state: StateStore, _ handler: String) -> [UsageRecord] {
        (try? state.usage.uses(of: handler, since: .distantPast)) ?? []
    }

    private func lines(of log: String, containing text: String) -> [Substring] {
        log.split(separator: "\n").filter { $0.contains(text) }
    }

    @Test func anUnlockIsOneUseOfTheHandlersThatOptInAndOnlyLogindCanSayIt() async throws {
        let daemon = try DaemonProcess(handlers: Self.handler("news", usage: "\"session\"")
            + Self.handler("plain", usage: "\"explicit\""))
        let bus = PrivateBus(socketPath: daemon.directory.file("system_bus_socket"))
        try await bus.start()
        let logind = try await FakeLogind(address: bus.address)
        try await daemon.start(arguments: ["--log-level", "debug"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        #expect(try await logind.waitForMatches(atLeast: Self.watcherMatches), "fetchd never watched logind's signals")

        // Not uses: the same signals from a connection that does not own logind's name (broadcast,
        // and addressed to fetchd directly), a session locking, the machine going to sleep.
        try await logind.send("forge")
        try await logind.send("locked")
        try await logind.send("sleep")
        try await Task.sleep(for: .seconds(1))
        #expect(uses(state, "news").isEmpty, "\(uses(state, "news"))")

        // logind's own Unlock: one use of the handler that opts in, none of the other.
        let unlockedAt = Date().addingTimeInterval(-0.01)  // stored to the millisecond
        try await logind.send("unlock")
        #expect(await waitUntil(timeoutSeconds: 10) { !uses(state, "news").isEmpty })
        let use = try #require(uses(state, "news").first)
        #expect(use.source == "session" && use.at >= unlockedAt, "a forged signal was taken: \(use)")

        // Within the session window every later sign of activity folds into that use.
        for command in ["active", "unlocked", "resume"] { try await logind.send(command) }
        try await Task.sleep(for: .seconds(1))
        #expect(uses(state, "news").count == 1, "\(uses(state, "news"))")
        #expect(uses(state, "plain").isEmpty)

        let usage = try await daemon.fetchctlWithoutBlocking(["usage", "news"])
        #expect(usage.status == 0 && usage.output.contains("usage sources session;"), "\(usage.output)")
        #expect(usage.output.contains("  session\n"), "\(usage.output)")
        let (status, log) = await daemon.stopWithoutBlocking()
        #expect(status == 0, "\(log)")
        #expect(lines(of: log, containing: "session activity (unlock): a use of news").count == 1, "\(log)")
        // The three later signals did arrive, and were folded (not lost).
        #expect(lines(of: log, containing: "within the session of the last recorded use").count == 3, "\(log)")
    }

    @Test func reloadsOptInAndOutAndARestartedLogindIsFollowed() async throws {
        let daemon = try DaemonProcess(handlers: Self.handler("news", usage: "\"explicit\""))
        let bus = PrivateBus(socketPath: daemon.directory.file("system_bus_socket"))
        try await bus.start()
        let logind = try await FakeLogind(address: bus.address)
        try await daemon.start(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        // Nobody opts in: fetchd leaves the bus alone.
        try await Task.sleep(for: .seconds(1))
        #expect(try await logind.send("matches") == "0")

        // A reload opts the handler in: the watcher connects.
        try daemon.directory.write(Self.handler("news", usage: "\"explicit\", \"session\""), to: "etc/handlers.d/test.toml")
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(try await logind.waitForMatches(atLeast: Self.watcherMatches), "a reload did not start the watcher")

        // logind leaves and another connection takes its name (a restart): its signals count.
        try await logind.send("release")
        try await logind.send("handover")
        try await logind.send("unlock")
        #expect(await waitUntil(timeoutSeconds: 10) { uses(state, "news").map(\.source) == ["session"] },
                "\(uses(state, "news"))")

        // A reload opts it out again: the watcher leaves the bus.
        try daemon.directory.write(Self.handler("news", usage: "\"explicit\""), to: "etc/handlers.d/test.toml")
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(try await logind.waitForMatches(atMost: 0), "the watcher stayed on the bus")

        let (status, log) = await daemon.stopWithoutBlocking()
        #expect(status == 0, "\(log)")
        let gone = lines(of: log, containing: "logind (org.freedesktop.login1) is not on the system bus")
        #expect(gone.count == 1 && gone[0].contains("warning"), "\(log)")
        #expect(lines(of: log, containing: "logind is on the system bus again").count == 1, "\(log)")
        #expect(lines(of: log, containing: "no handler uses it any more").count == 1, "\(log)")
    }

    @Test func withoutASystemBusTheDaemonServesAndConnectsWhenTheBusComes() async throws {
        let daemon = try DaemonProcess(handlers: Self.handler("news", usage: "\"session\""))
        let bus = PrivateBus(socketPath: daemon.directory.file("system_bus_socket"))
        try await daemon.start(arguments: ["--log-level", "debug"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))

        // No bus: the daemon runs its handlers and answers, and keeps retrying.
        #expect(await waitUntil(timeoutSeconds: 15) { ((try? state.history(of: "news", limit: 1)) ?? []).count == 1 })
        try await Task.sleep(for: .seconds(4))  // a few retries fail meanwhile
        #expect(try await daemon.fetchctlWithoutBlocking(["ping"]).status == 0)
        #expect(try await daemon.fetchctlWithoutBlocking(["status"]).status == 0)

        // The bus comes: fetchd connects and takes logind's signals.
        try await bus.start()
        var logind = try await FakeLogind(address: bus.address)
        #expect(try await logind.waitForMatches(atLeast: Self.watcherMatches), "fetchd did not connect to the new bus")
        try await logind.send("unlock")
        #expect(await waitUntil(timeoutSeconds: 10) { uses(state, "news").count == 1 })

        // The bus goes away and comes back: fetchd reconnects.
        await bus.stop()
        try await bus.start()
        logind = try await FakeLogind(address: bus.address)
        #expect(try await logind.waitForMatches(atLeast: Self.watcherMatches), "fetchd did not reconnect")
        #expect(try await daemon.fetchctlWithoutBlocking(["ping"]).status == 0)

        let (status, log) = await daemon.stopWithoutBlocking()
        #expect(status == 0, "\(log)")
        // One warning per outage, however many retries: the rest are debug lines.
        let unreachable = lines(of: log, containing: "cannot watch logind on the system bus")
        #expect(unreachable.filter { $0.contains(" warning ") }.count == 1, "\(log)")
        #expect(unreachable.filter { $0.contains(" debug ") }.count >= 1, "\(log)")
        #expect(lines(of: log, containing: "the system bus connection closed").filter { $0.contains(" warning ") }.count == 1,
                "\(log)")
        #expect(lines(of: log, containing: "connected to the system bus again").count == 2, "\(log)")
    }
}
