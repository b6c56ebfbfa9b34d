import FetchdConfig
import FetchdCore
@testable import FetchdDaemon
import FetchdState
import Foundation
import Testing

/// The scheduling rules, checked at chosen instants with no waiting.
struct SchedulerTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func handler(_ name: String, _ interval: HandlerConfig.MinInterval, enabled: Bool = true) -> HandlerConfig {
        var handler = HandlerConfig(name: name, options: .doNothing)
        handler.minInterval = interval
        handler.enabled = enabled
        return handler
    }

    private func state(_ name: String, lastAttempt secondsAgo: Double) -> HandlerState {
        var state = HandlerState(name: name)
        state.lastAttemptAt = now.addingTimeInterval(-secondsAgo)
        return state
    }

    @Test func plannedHandlersCloseTogetherShareOneWake() {
        // The early window alone (no grid, no late window), at two minutes.
        let early = WakeSharing(delayFraction: 0.1, earlySeconds: 120, lateSeconds: 0, gridSeconds: 0)
        let handlers = ["a", "b", "c", "d"].map { handler($0, .seconds(600)) }
        var states = Dictionary(uniqueKeysWithValues: handlers.map { ($0.name, state($0.name, lastAttempt: 3600)) })
        states["d"] = state("d", lastAttempt: 300)
        let planned = ["a": now, "b": now.addingTimeInterval(90), "c": now.addingTimeInterval(200),
                       "d": now.addingTimeInterval(60)]
        // b is 90 s away: it joins a's wake; c is too far; d's min_interval (10 min) is not over yet.
        #expect(Scheduler.due(handlers, states: states, now: now, planned: planned, sharing: early).map(\.name) == ["a", "b"])
        // b's own floor (its budget) is 30 s away: it may not run early, however close its plan.
        #expect(Scheduler.due(handlers, states: states, now: now, planned: planned,
                              floors: ["b": now.addingTimeInterval(30)], sharing: early).map(\.name) == ["a"])
        // Nothing due now: nothing runs early either (an early run needs a wake that happens anyway).
        let later = planned.mapValues { $0.addingTimeInterval(30) }
        #expect(Scheduler.due(handlers, states: states, now: now, planned: later, sharing: early).isEmpty)
    }

    /// Within its window a fetch runs at the quarter hour (`now` is one) when the window holds
    /// one: independent handlers meet there.
    @Test func aWindowRunsAtItsGridPoint() {
        let hourly = handler("hourly", .seconds(3600))
        // Eligible a minute ago, it may wait 6 minutes: the quarter hour is now.
        #expect(Scheduler.window(hourly, state: state("hourly", lastAttempt: 3660), now: now)?.closes == now)
        // Eligible in 5 minutes, waiting until 11: no quarter hour within reach, so at the end.
        #expect(Scheduler.window(hourly, state: state("hourly", lastAttempt: 3300), now: now)?.closes == now.addingTimeInterval(660))
        // Planned in 400 s: the quarter hour now is within 7.5 minutes before it.
        let planned = Scheduler.window(hourly, state: state("hourly", lastAttempt: 7200), now: now, planned: now.addingTimeInterval(400))
        #expect(planned?.closes == now)
        #expect(Scheduler.due([hourly], states: ["hourly": state("hourly", lastAttempt: 7200)], now: now,
                              planned: ["hourly": now.addingTimeInterval(400)]).count == 1)
        #expect(Scheduler.window(hourly, state: state("hourly", lastAttempt: 3660), now: now, sharing: .none)?.closes
                == now.addingTimeInterval(-60))
    }

    @Test func neverRunHandlersAreDueAtOnce() {
        let handlers = [handler("a", .seconds(3600)), handler("b", .minimum)]
        #expect(Scheduler.due(handlers, states: [:], now: now).map(\.name) == ["a", "b"])
    }

    @Test func minIntervalIsAFloorSinceTheLastAttempt() {
        let handlers = [handler("hourly", .seconds(3600)), handler("often", .minimum)]
        let states = ["hourly": state("hourly", lastAttempt: 1800), "often": state("often", lastAttempt: 5)]
        #expect(Scheduler.due(handlers, states: states, now: now).map(\.name) == ["often"])
        let later = ["hourly": state("hourly", lastAttempt: 3600), "often": state("often", lastAttempt: 5)]
        #expect(Scheduler.due(handlers, states: later, now: now).map(\.name) == ["hourly", "often"])
    }

    @Test func neverAndDisabledHandlersRunOnlyOnRequest() {
        let handlers = [handler("manual", .never), handler("off", .minimum, enabled: false)]
        let states = ["manual": state("manual", lastAttempt: 1e6)]
        #expect(Scheduler.due(handlers, states: states, now: now).isEmpty)
        #expect(Scheduler.nextEligible(handlers[0], state: states["manual"], now: now) == nil)
        #expect(Scheduler.nextEligible(handlers[1], state: nil, now: now) == nil)
        #expect(Scheduler.due(handlers, states: [:], now: now).isEmpty, "never-run handlers follow the same rule")
    }

    @Test func aServerHintIsAFloorUnlessIgnored() {
        var polite = handler("polite", .seconds(60))
        var request = HTTPOptions(url: "https://example.com/")
        polite.options = .http(request)
        var hinted = state("polite", lastAttempt: 120)
        hinted.notBefore = now.addingTimeInterval(300)
        #expect(Scheduler.nextEligible(polite, state: hinted, now: now) == now.addingTimeInterval(300))
        #expect(Scheduler.due([polite], states: ["polite": hinted], now: now).isEmpty)
        request.honorServerHints = false
        polite.options = .http(request)
        #expect(Scheduler.nextEligible(polite, state: hinted, now: now) == now.addingTimeInterval(-60))
    }

    @Test func anAttemptInTheFutureCountsAsNow() {
        // The wall clock was stepped back an hour after the last attempt.
        let hourly = handler("h", .seconds(600))
        let future = state("h", lastAttempt: -3600)
        #expect(Scheduler.nextEligible(hourly, state: future, now: now) == now.addingTimeInterval(600))
        #expect(Scheduler.due([handler("m", .minimum)], states: ["m": state("m", lastAttempt: -3600)], now: now).count == 1)
    }

    @Test func aServerHintMovesBackWithAClockSteppedBack() {
        // Retry-After: 1 h, then the wall clock was stepped back 3 h: still 1 h after the attempt
        // (counted as now), not 4 h.
        let polite = handler("polite", .seconds(60))
        var hinted = state("polite", lastAttempt: -3 * 3600)
        hinted.notBefore = now.addingTimeInterval(4 * 3600)
        #expect(Scheduler.nextEligible(polite, state: hinted, now: now) == now.addingTimeInterval(3600))
        #expect(Scheduler.nextEligible(polite, state: hinted, now: now, planned: now) == now.addingTimeInterval(3600))
        // A clock that did not step back leaves the floor where the server put it.
        hinted.lastAttemptAt = now.addingTimeInterval(-10)
        #expect(Scheduler.nextEligible(polite, state: hinted, now: now) == now.addingTimeInterval(4 * 3600))
    }

    @Test func upcomingIsTheEarliestEndOfAWindow() {
        // Each may wait a tenth of its min_interval for a shared wake: b until 20 s + 12 s.
        let handlers = [handler("a", .seconds(600)), handler("b", .seconds(120))]
        let states = ["a": state("a", lastAttempt: 100), "b": state("b", lastAttempt: 100)]
        #expect(Scheduler.upcoming(handlers, states: states, now: now) == now.addingTimeInterval(32))
        #expect(Scheduler.upcoming(handlers, states: states, now: now, sharing: .none) == now.addingTimeInterval(20))
        #expect(Scheduler.upcoming([], states: [:], now: now) == nil)
        // Overdue (a wake just missed it) gives a time past; `minimum` follows the heartbeat.
        let overdue = ["a": state("a", lastAttempt: 700), "b": state("b", lastAttempt: 100)]
        #expect(Scheduler.upcoming(handlers, states: overdue, now: now) == now.addingTimeInterval(-40))
        #expect(Scheduler.upcoming([handler("m", .minimum)], states: ["m": state("m", lastAttempt: 5)], now: now) == nil)
        // Due within the tolerance counts as due: at the end of its window, and with no sharing at its floor.
        let almost = ["b": state("b", lastAttempt: 131.95)]
        #expect(Scheduler.due([handlers[1]], states: almost, now: now).count == 1)
        #expect(Scheduler.due([handlers[1]], states: ["b": state("b", lastAttempt: 119.95)], now: now, sharing: .none).count == 1)
    }
}

/// The order in which a wake hands its due handlers to the bounded window of tasks.
struct WakeOrderTests {
    @Test func hostsTakeTurnsAndEachKeepsItsOrder() {
        let names = ["a1", "a2", "a3", "a4", "b1", "c1", "c2"]
        let handlers = names.map { HandlerConfig(name: $0, options: .exampleURL) }
        let ordered = WakeQueue.interleavedByHost(handlers) { String($0.name.prefix(1)) }
        #expect(ordered.map(\.name) == ["a1", "b1", "c1", "a2", "c2", "a3", "a4"])
    }

    @Test func nothingIsLostOrRepeated() {
        let handlers = (0..<500).map { HandlerConfig(name: "h\($0)", options: .exampleURL) }
        let ordered = WakeQueue.interleavedByHost(handlers) { "host\(Int($0.name.dropFirst())! % 7)" }
        #expect(Set(ordered.map(\.name)) == Set(handlers.map(\.name)) && ordered.count == 500)
    }
}
