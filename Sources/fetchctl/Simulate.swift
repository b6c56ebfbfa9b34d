import ArgumentParser
import FetchdCore
import FetchdPlanner
import Foundation

/// `fetchctl simulate --usage FILE`: replays a usage trace through the daemon's own model and
/// planner with a virtual clock, against a fixed interval and the oracle.
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay a usage trace through the planner and report staleness at use.",
        discussion: """
            The trace holds one ISO-8601 time with its UTC offset per line (2026-03-02T09:02:48+08:00), \
            the moments of use. The planner learns online: it sees a use only once it has happened. \
            Fetches succeed at once unless --failure-rate is given.
            """)

    @Option(name: .long, help: "The usage trace.")
    var usage: String
    @Option(name: .long, help: "Fetches per day, e.g. 12/day or 1/hour.")
    var budget = "12/day"
    @Option(name: .customLong("min-interval"), help: "The least time between fetches.")
    var minInterval = "5m"
    @Option(name: .customLong("max-staleness"), help: "The content is never older than this.")
    var maxStaleness = "1d"
    @Option(name: .long, help: "How long before a predicted use its fetch is made.")
    var lead = "2m"
    @Option(name: .customLong("failure-rate"), help: "The share of fetches that fail, 0 to 1.")
    var failureRate = 0.0
    @Option(name: .customLong("emit-fetches"), help: "Write every adaptive fetch time here, one per line.")
    var emitFetches: String?
    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() throws {
        let uses: [UsageEvent]
        do { uses = try UsageTrace.read(path: usage) } catch { throw CleanExit.failure("fetchctl: \(error)") }
        var simulator = Simulator(limits: FetchPlanner.Limits(
            budgetPerDay: try Self.perDay(budget), minIntervalSeconds: try Self.seconds(minInterval, "--min-interval"),
            maxStalenessSeconds: try Self.seconds(maxStaleness, "--max-staleness"),
            leadSeconds: try Self.seconds(lead, "--lead")))
        guard (0...1).contains(failureRate) else { throw CleanExit.failure("fetchctl: --failure-rate must be between 0 and 1") }
        simulator.failureRate = failureRate
        let report = simulator.run(uses)
        if let emitFetches {
            let offset = uses.last?.utcOffsetSeconds ?? 0
            let lines = report.fetchTimes.map { UsageTrace.format($0, offsetSeconds: offset) }
            try (lines.joined(separator: "\n") + "\n").write(toFile: emitFetches, atomically: true, encoding: .utf8)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            var shown = report
            shown.fetchTimes = []  // --emit-fetches writes them
            print(String(decoding: try encoder.encode(shown), as: UTF8.self))
            return
        }
        print("strategy        uses  fetches/day  wakes/day  median  p90     mean    fresh at use")
        for (name, metrics) in [("adaptive", report.adaptive), ("fixed interval", report.fixedInterval),
                                ("oracle", report.oracle)] {
            print(name.padding(toLength: 14, withPad: " ", startingAt: 0)
                  + String(format: "  %4d  %11.1f  %9.1f  %5.1fm  %5.1fm  %5.1fm  %.2f", metrics.uses, metrics.fetchesPerDay,
                           metrics.wakesPerDay, metrics.medianStalenessMinutes, metrics.p90StalenessMinutes,
                           metrics.meanStalenessMinutes, metrics.freshAtUse))
        }
        print("fresh at use by week (adaptive): " + report.freshAtUseByWeek.map { String(format: "%.2f", $0) }.joined(separator: " "))
        print(String(format: "planning: %.0f µs per decision", report.planningMicroseconds))
    }

    /// `12/day`, `2/hour`, or a bare number (per day).
    static func perDay(_ text: String) throws -> Int {
        let parts = text.split(separator: "/")
        guard let count = Double(parts.first ?? ""), count > 0, parts.count <= 2 else {
            throw CleanExit.failure("fetchctl: --budget \"\(text)\" is not a rate; expected e.g. 12/day or 1/hour")
        }
        switch parts.count == 2 ? String(parts[1]) : "day" {
        case "day", "d": return max(1, Int(count.rounded()))
        case "hour", "h": return max(1, Int((count * 24).rounded()))
        case "week", "w": return max(1, Int((count / 7).rounded()))
        default: throw CleanExit.failure("fetchctl: --budget \"\(text)\": the unit must be day, hour or week")
        }
    }

    static func seconds(_ text: String, _ option: String) throws -> Double {
        do { return try HumanDuration.parseSeconds(text) } catch {
            throw CleanExit.failure("fetchctl: \(option): \(error)")
        }
    }
}
