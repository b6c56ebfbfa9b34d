import FetchdConfig
import FetchdCore
@testable import FetchdDaemon
import FetchdPlanner
import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// `fetchctl simulate` must judge the planner the daemon runs: the same trace, replayed through
/// the daemon's own decision (`FetchCoordinator.decide`: uses and fetches stored in its SQLite
/// state and read back, its time zone, its results fed back) on a simulated clock, gives the
/// simulator's fetch times. Both decide again after every use and every fetch; the daemon also
/// decides again when a plan is over an hour old at a wake (`UsagePlans.lifetimeSeconds`), which the
/// simulator does not model and this test does not cover.
struct SimulatorParityTests {
    private static let handlers = """
        [[handler]]
        name = "news"
        kind = "exec"
        command = ["/bin/true"]
        min_interval = "5m"
        usage = ["explicit"]
        budget = "12/day"
        lead = "2m"
        max_staleness = "1d"
        """

    /// Two weeks from Monday 1 June 2026 (no daylight-saving change in most zones), in this
    /// machine's time zone: one to four sessions a day at random times of day, some followed
    /// by another within two hours (the structure the learned planner reads).
    static func uses() -> [UsageEvent] {
        var random = UInt64(42)
        func unit() -> Double {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(random >> 11) / Double(1 << 53)
        }
        let start = 1_780_272_000.0  // 2026-06-01T00:00:00Z
        var times: [Double] = []
        for day in 0..<14 {
            for _ in 0..<(1 + Int(unit() * 4)) {
                let at = start + Double(day) * 86_400 + 28_800 + unit() * 54_000
                times.append(at)
                if unit() < 0.4 { times.append(at + 1_800 + unit() * 5_400) }
            }
        }
        return times.sorted().map { time in
            let date = Date(timeIntervalSince1970: time.rounded())
            return UsageEvent(date: date, utcOffsetSeconds: TimeZone.current.secondsFromGMT(for: date))
        }
    }

    @Test func theDaemonsPlanningGivesTheSimulatorsFetchTimes() async throws {
        let uses = Self.uses()
        let limits = FetchPlanner.Limits(budgetPerDay: 12, minIntervalSeconds: 300, maxStalenessSeconds: 86_400, leadSeconds: 120)
        let simulated = Simulator(limits: limits).run(uses).fetchTimes

        let directory = try TemporaryDirectory("parity")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, handlers: Self.handlers)
        let handler = try #require(await coordinator.config.handler(named: "news"))
        let state = coordinator.state
        func fetch(at date: Date) throws {
            try state.record(CompletedFetch(handler: "news", trigger: .usage, startedAt: date, finishedAt: date, result: .newData))
        }
        // As the simulator does: the first fetch at the local midnight before the first use,
        // then whichever comes first, the next use or the planned fetch.
        let first = try #require(uses.first)
        var now = Date(timeIntervalSince1970: Double(
            LocalTime(first.date, offsetSeconds: first.utcOffsetSeconds).dayNumber * 86_400 - first.utcOffsetSeconds))
        try fetch(at: now)
        var replayed = [now], index = 0
        while index < uses.count {
            let next = await coordinator.decide(handler, now: now).decision.date
            if uses[index].date <= next {
                now = uses[index].date
                try state.usage.record(of: "news", at: now, utcOffsetSeconds: uses[index].utcOffsetSeconds, source: "explicit")
                index += 1
            } else {
                now = next
                try fetch(at: now)
                replayed.append(now)
            }
        }
        #expect(replayed.count > 100)
        // SQLite keeps times to the millisecond.
        #expect(replayed.count == simulated.count)
        for (daemon, simulator) in zip(replayed, simulated) {
            #expect(abs(daemon.timeIntervalSince(simulator)) < 0.01, "daemon \(daemon), simulator \(simulator)")
        }
    }
}
