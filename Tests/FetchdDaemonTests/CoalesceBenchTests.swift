import FetchdConfig
import FetchdCore
@testable import FetchdDaemon
import FetchdPlanner
import Foundation
import Testing

/// Shared wakes: handlers on fixed intervals and usage-planned ones replayed through the
/// daemon's wake rule (`FleetReplay`), with the daemon's tolerance (`WakeSharing.standard`) and
/// without. The bench (`make bench-coalesce`, bench/coalesce_bench.py) runs the full fleet on
/// real traces and scores it; the other tests hold the rule's promises on a small fleet.
struct CoalesceBenchTests {
    /// The bench's fixed intervals, in minutes.
    static let intervalMinutes: [Double] = [15, 30, 45, 60, 90, 120, 180, 240, 360, 720]
    /// Monday 1 June 2026, 00:00 UTC: the bench's start.
    static let start = Date(timeIntervalSince1970: 1_780_272_000)
    /// The seed the phases are drawn from (the number).
    static let seed: UInt64 = 43

    /// A small deterministic generator (SplitMix64), so the phases repeat exactly.
    struct Draw {
        /// The generator's state, the seed at first.
        var state: UInt64
        /// A number in [0, 1).
        mutating func unit() -> Double {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
        }
    }

    /// The ten fixed-interval handlers, their phases drawn from `seed`.
    static func intervals(_ draw: inout Draw) -> [FleetReplay.Interval] {
        intervalMinutes.map { minutes in
            FleetReplay.Interval(name: "every-\(Int(minutes))m", intervalSeconds: minutes * 60, phase: draw.unit())
        }
    }

    /// Each trace moved by whole weeks (so weekdays and local times stay) so that its last two
    /// weeks fall as near `start` as whole weeks allow; what comes before is its history.
    static func planned(_ traces: [(name: String, uses: [UsageEvent])], _ draw: inout Draw) -> [FleetReplay.Planned] {
        traces.map { trace in
            let last = trace.uses.last?.date ?? start
            let weeks = (start.timeIntervalSince(last.addingTimeInterval(-14 * 86_400)) / 604_800).rounded()
            let uses = trace.uses.map { UsageEvent(date: $0.date.addingTimeInterval(weeks * 604_800), utcOffsetSeconds: $0.utcOffsetSeconds) }
            return FleetReplay.Planned(name: trace.name, uses: uses, lastFetchSecondsBefore: draw.unit() * 7_200)
        }
    }

    @Test func intervalHandlersShareWakesWithinTheirTolerance() {
        var draw = Draw(state: Self.seed)
        let intervals = Self.intervals(&draw)
        var fleet = FleetReplay(intervals: intervals, planned: [], start: Self.start, days: 3, sharing: .standard)
        let shared = fleet.run()
        fleet.sharing = .none
        let alone = fleet.run()
        #expect(shared.idleTimerWakes == 0 && alone.idleTimerWakes == 0, "a timer wake always runs a fetch")
        #expect(Double(shared.wakes.count) < 0.6 * Double(alone.wakes.count), "\(shared.wakes.count) against \(alone.wakes.count)")
        for interval in intervals {
            let times = shared.fetches[interval.name] ?? []
            let gaps = zip(times.dropFirst(), times).map { $0.timeIntervalSince($1) }
            // min_interval stays a floor; the wait is at most the documented share of it (and
            // the daemon's least wait of half a second).
            #expect(gaps.allSatisfy { $0 >= interval.intervalSeconds - Scheduler.dueTolerance }, "\(interval.name)")
            let most = interval.intervalSeconds * (1 + WakeSharing.standard.delayFraction) + 0.5
            #expect(gaps.allSatisfy { $0 <= most }, "\(interval.name): \(gaps.max() ?? 0) s")
            let unshared = alone.fetches[interval.name] ?? []
            #expect(zip(unshared.dropFirst(), unshared).allSatisfy { abs($0.timeIntervalSince($1) - interval.intervalSeconds) < 0.5 })
        }
    }

    @Test func plannedFetchesMoveAFewMinutesAndNeverInsideTheirFloor() {
        var draw = Draw(state: Self.seed)
        let intervals = Self.intervals(&draw)
        let uses = SimulatorParityTests.uses().map { UsageEvent(date: $0.date.addingTimeInterval(-14 * 86_400),
                                                                utcOffsetSeconds: $0.utcOffsetSeconds) }
        let planned = Self.planned([("reader", uses)], &draw)
        let fleet = FleetReplay(intervals: intervals, planned: planned, start: Self.start, days: 7, sharing: .standard)
        let outcome = fleet.run()
        #expect(outcome.idleTimerWakes == 0)
        #expect(!outcome.earlySeconds.isEmpty)
        #expect(outcome.earlySeconds.allSatisfy {
            $0 >= -WakeSharing.standard.lateSeconds - 0.5 && $0 <= WakeSharing.standard.earlySeconds + 0.5
        })
        let times = outcome.fetches["reader"] ?? []
        #expect(zip(times.dropFirst(), times).allSatisfy { $0.timeIntervalSince($1) >= fleet.plannedMinIntervalSeconds - 0.5 })
        // Its own budget: never more than 12 in any 24 hours.
        for (index, time) in times.enumerated() {
            #expect(times[index...].prefix { $0 < time.addingTimeInterval(86_400) }.count <= 12)
        }
    }

    /// The bench itself, run by `make bench-coalesce` (bench/coalesce_bench.py), which names the
    /// traces (FETCHD_COALESCE_TRACES, separated by ":") and the folder for what it scores
    /// (FETCHD_COALESCE_OUT): per run, `summary.json` and each usage-planned handler's uses
    /// and fetches, one ISO-8601 time a line, as ../shared/scoring/staleness.py reads them.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["FETCHD_COALESCE_OUT"] != nil))
    func bench() throws {
        let environment = ProcessInfo.processInfo.environment
        let out = try #require(environment["FETCHD_COALESCE_OUT"])
        let paths = (environment["FETCHD_COALESCE_TRACES"] ?? "").split(separator: ":").map(String.init)
        let traces = try paths.map { path in
            (name: URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent, uses: try UsageTrace.read(path: path))
        }
        var draw = Draw(state: Self.seed)
        let intervals = Self.intervals(&draw)
        let planned = Self.planned(traces, &draw)
        let days = 14.0
        // Another tolerance to weigh against the daemon's (FETCHD_COALESCE_DELAY_FRACTION,
        // FETCHD_COALESCE_EARLY_SECONDS, _LATE_SECONDS, _GRID_SECONDS); the daemon's when unset.
        var tried = WakeSharing.standard
        if let fraction = environment["FETCHD_COALESCE_DELAY_FRACTION"].flatMap(Double.init) { tried.delayFraction = fraction }
        if let seconds = environment["FETCHD_COALESCE_EARLY_SECONDS"].flatMap(Double.init) { tried.earlySeconds = seconds }
        if let seconds = environment["FETCHD_COALESCE_LATE_SECONDS"].flatMap(Double.init) { tried.lateSeconds = seconds }
        if let seconds = environment["FETCHD_COALESCE_GRID_SECONDS"].flatMap(Double.init) { tried.gridSeconds = seconds }
        for (label, sharing) in [("shared", tried), ("unshared", WakeSharing.none)] {
            let fleet = FleetReplay(intervals: intervals, planned: planned, start: Self.start, days: days, sharing: sharing)
            let began = ContinuousClock.now
            let outcome = fleet.run()
            let seconds = Double((ContinuousClock.now - began) / .milliseconds(1)) / 1000
            try Self.write(outcome, of: fleet, seconds: seconds, to: URL(fileURLWithPath: out).appendingPathComponent(label))
        }
    }

    private static func write(_ outcome: FleetReplay.Outcome, of fleet: FleetReplay, seconds: Double, to folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let end = fleet.start.addingTimeInterval(fleet.days * 86_400)
        func inRun(_ name: String) -> Int { (outcome.fetches[name] ?? []).filter { $0 >= fleet.start && $0 < end }.count }
        for handler in fleet.planned {
            let offset = handler.uses.last?.utcOffsetSeconds ?? 0
            let uses = handler.uses.filter { $0.date >= fleet.start && $0.date < end }
            try lines(uses.map { UsageTrace.format($0.date, offsetSeconds: $0.utcOffsetSeconds) }, to: folder, "uses-\(handler.name).txt")
            try lines((outcome.fetches[handler.name] ?? []).map { UsageTrace.format($0, offsetSeconds: offset) },
                      to: folder, "fetches-\(handler.name).txt")
        }
        let early = outcome.earlySeconds.filter { $0 > 0.5 }, late = outcome.earlySeconds.filter { $0 < -0.5 }
        let summary: [String: Any] = [
            "days": fleet.days,
            "sharing": ["delay_fraction": fleet.sharing.delayFraction, "early_seconds": fleet.sharing.earlySeconds,
                        "late_seconds": fleet.sharing.lateSeconds, "grid_seconds": fleet.sharing.gridSeconds],
            "wakes": outcome.wakes.count,
            "fetches": fleet.handlers.map { inRun($0.name) }.reduce(0, +),
            "interval_fetches": fleet.intervals.map { inRun($0.name) }.reduce(0, +),
            "planned_fetches": fleet.planned.map { inRun($0.name) }.reduce(0, +),
            "idle_timer_wakes": outcome.idleTimerWakes,
            "planned_moved_earlier": early.count,
            "planned_mean_early_minutes": early.isEmpty ? 0 : early.reduce(0, +) / Double(early.count) / 60,
            "planned_moved_later": late.count,
            "planned_mean_late_minutes": late.isEmpty ? 0 : -late.reduce(0, +) / Double(late.count) / 60,
            "fetches_per_handler": Dictionary(uniqueKeysWithValues: fleet.handlers.map { ($0.name, inRun($0.name)) }),
            "replay_seconds": seconds,
        ]
        let data = try JSONSerialization.data(withJSONObject: summary, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: folder.appendingPathComponent("summary.json"))
    }

    private static func lines(_ lines: [String], to folder: URL, _ name: String) throws {
        try (lines.joined(separator: "\n") + "\n").write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }
}
