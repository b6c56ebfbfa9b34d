import ArgumentParser
import FetchdConfig
import FetchdCore
import FetchdPlanner
import FetchdState
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

    @Option(name: .long, help: "The usage trace (or --from-state).")
    var usage: String?
    @Flag(name: .customLong("from-state"), help: "Replay the uses recorded on this machine for --handler.")
    var fromState = false
    @Option(name: .long, help: "Take the limits (and with --from-state, the state directory) from this config.")
    var config: String?
    @Option(name: .long, help: "The handler whose limits (and recorded uses) to take.")
    var handler: String?
    @Option(name: .long, help: "Fetches per day, e.g. 12/day or 1/hour (default: the handler's, else 12/day).")
    var budget: String?
    @Option(name: .customLong("min-interval"), help: "The least time between fetches (default: the handler's, else 5m).")
    var minInterval: String?
    @Option(name: .customLong("max-staleness"), help: "The content is never older than this (default: the handler's, else 1d).")
    var maxStaleness: String?
    @Option(name: .long, help: "How long before a predicted use its fetch is made (default: the handler's, else 2m).")
    var lead: String?
    @Option(name: .customLong("failure-rate"), help: "The share of fetches that fail, 0 to 1.")
    var failureRate = 0.0
    @Option(name: .long, help: ArgumentHelp(
        "How uses with no habit are forecast: learned (the daemon's), time-of-day or profile.",
        valueName: "policy"))
    var policy = "learned"
    @Option(name: .customLong("emit-fetches"), help: "Write every adaptive fetch time here, one per line.")
    var emitFetches: String?
    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() throws {
        let (limits, databasePath) = try resolveLimits()
        let uses = try loadUses(databasePath: databasePath)
        var simulator = Simulator(limits: limits)
        guard (0...1).contains(failureRate) else { throw CleanExit.failure("fetchctl: --failure-rate must be between 0 and 1") }
        simulator.failureRate = failureRate
        guard let chosen = FetchPlanner.Policy(rawValue: policy) else {
            let known = FetchPlanner.Policy.allCases.map(\.rawValue).joined(separator: ", ")
            throw CleanExit.failure("fetchctl: --policy \"\(policy)\" is not a policy; expected one of \(known)")
        }
        simulator.policy = chosen
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

    /// The planner's limits: options first, then the handler's config, then the defaults; and
    /// the state database the config names.
    private func resolveLimits() throws -> (FetchPlanner.Limits, String) {
        var handlerConfig: HandlerConfig?
        var databasePath = DaemonConfig().databasePath
        if let config {
            let loaded: LoadedConfig
            do { loaded = try ConfigLoader.load(mainFile: config, readsSecrets: false) } catch {
                throw CleanExit.failure("fetchctl: \(error.description)")
            }
            databasePath = loaded.daemon.databasePath
            if let handler {
                guard let found = loaded.handler(named: handler) else {
                    throw CleanExit.failure("fetchctl: \(config) defines no valid handler named \"\(handler)\"")
                }
                handlerConfig = found
            }
        }
        return (FetchPlanner.Limits(
            budgetPerDay: try budget.map(Self.perDay) ?? handlerConfig?.budgetPerDay ?? Defaults.budgetPerDay,
            minIntervalSeconds: try minInterval.map { try Self.seconds($0, "--min-interval") } ?? handlerConfig?.minIntervalSeconds ?? 300,
            maxStalenessSeconds: try maxStaleness.map { try Self.seconds($0, "--max-staleness") }
                ?? handlerConfig?.maxStalenessSeconds ?? Defaults.maxStalenessSeconds,
            leadSeconds: try lead.map { try Self.seconds($0, "--lead") } ?? handlerConfig?.leadSeconds ?? Defaults.leadSeconds),
            databasePath)
    }

    /// The trace file, or the uses recorded in the state database.
    private func loadUses(databasePath: String) throws -> [UsageEvent] {
        if fromState {
            guard let handler else { throw CleanExit.failure("fetchctl: --from-state needs --handler NAME") }
            do {
                return try UsageLedger.uses(inDatabaseAt: databasePath, of: handler)
                    .map { UsageEvent(date: $0.at, utcOffsetSeconds: $0.utcOffsetSeconds) }
            } catch {
                throw CleanExit.failure("fetchctl: cannot read the uses of \(handler) from \(databasePath): \(error)")
            }
        }
        guard let usage else { throw CleanExit.failure("fetchctl: give --usage FILE, or --from-state --handler NAME") }
        do { return try UsageTrace.read(path: usage) } catch { throw CleanExit.failure("fetchctl: \(error)") }
    }

    /// A budget as the config spells it (`12/day`, `1/hour`, `20/week`), in fetches per day.
    static func perDay(_ text: String) throws -> Int {
        guard let perDay = FetchBudget.perDay(text) else {
            throw CleanExit.failure("fetchctl: --budget \"\(text)\" is not a fetch budget; expected e.g. 12/day or 1/hour")
        }
        return perDay
    }

    static func seconds(_ text: String, _ option: String) throws -> Double {
        do { return try HumanDuration.parseSeconds(text) } catch {
            throw CleanExit.failure("fetchctl: \(option): \(error)")
        }
    }
}
