import FetchdCore
import Foundation

/// Replays a usage trace through the planner with a virtual clock, learning online (a use is
/// seen only once it has happened), and measures how fresh the content was at each use. In the
/// same run it measures a fixed interval with the same number of fetches, and the oracle that
/// fetches exactly at each use.
public struct Simulator: Sendable {
    /// How fresh the content was at the uses, for one strategy.
    public struct Metrics: Sendable, Equatable, Codable {
        /// Uses in the trace.
        public var uses: Int
        /// Fetches made (attempts, failed ones included).
        public var fetches: Int
        /// Fetches per day of trace.
        public var fetchesPerDay: Double
        /// Wakes per day (one handler: a wake per fetch).
        public var wakesPerDay: Double
        /// Staleness at use, in minutes: median, 90th percentile, mean.
        public var medianStalenessMinutes: Double
        /// See `medianStalenessMinutes`.
        public var p90StalenessMinutes: Double
        /// See `medianStalenessMinutes`.
        public var meanStalenessMinutes: Double
        /// The share of uses with staleness at most 15 minutes.
        public var freshAtUse: Double
    }

    /// The three strategies side by side, plus the adaptive fetch times and fresh-at-use per week.
    public struct Report: Sendable, Codable {
        /// The planner under test.
        public var adaptive: Metrics
        /// Evenly spaced fetches, as many as the adaptive planner made.
        public var fixedInterval: Metrics
        /// A fetch exactly at every use.
        public var oracle: Metrics
        /// Adaptive fresh-at-use per week of the trace.
        public var freshAtUseByWeek: [Double]
        /// Mean planning time per decision, in microseconds.
        public var planningMicroseconds: Double
        /// The most the model held at any decision, in bytes: the remembered sessions, all of the
        /// state a handler's planning keeps (the rest is computed again at each decision).
        public var learnedStateBytes: Int
        /// Every adaptive fetch, as an instant.
        public var fetchTimes: [Date]
    }

    /// The planner's limits.
    public var limits: FetchPlanner.Limits
    /// The model's settings.
    public var settings = UsageModel.Settings()
    /// The share of fetches that fail (retried with back-off); 0 by default.
    public var failureRate = 0.0
    /// How the planner forecasts uses with no habit (the daemon's is the default).
    public var policy = FetchPlanner.Policy.learned
    /// Uses with staleness at most this are fresh.
    public static let freshSeconds = FetchPlanner.freshSeconds

    /// Creates a simulator.
    public init(limits: FetchPlanner.Limits) { self.limits = limits }

    /// Runs the trace. The first fetch happens at the local midnight before the first use.
    public func run(_ uses: [UsageEvent]) -> Report {
        guard let firstUse = uses.first, let lastUse = uses.last else {
            let empty = Self.metrics(staleness: [], fetches: 0, days: 1)
            return Report(adaptive: empty, fixedInterval: empty, oracle: empty, freshAtUseByWeek: [],
                          planningMicroseconds: 0, learnedStateBytes: 0, fetchTimes: [])
        }
        let start = Date(timeIntervalSince1970: Double(
            LocalTime(firstUse.date, offsetSeconds: firstUse.utcOffsetSeconds).dayNumber * 86_400 - firstUse.utcOffsetSeconds))
        let end = lastUse.date.addingTimeInterval(60)
        let days = max(1, end.timeIntervalSince(start) / 86_400)
        var planner = FetchPlanner(limits: limits)
        planner.policy = policy
        var planning = OnlinePlanning(planner: planner, model: UsageModel(settings: settings), firstFetch: start)
        var random = SplitMix(seed: 42)
        var fresh = start
        var staleness: [Double] = [], useIndex = 0
        var planningTime = Duration.zero, decisions = 0, mostSessions = 0
        var now = start
        while useIndex < uses.count {
            let clock = ContinuousClock(), began = clock.now
            let next = planning.decide(now: now).date
            planningTime += clock.now - began
            decisions += 1
            let use = uses[useIndex]
            if use.date <= next {
                now = use.date
                staleness.append(use.date.timeIntervalSince(fresh))
                planning.use(use)
                mostSessions = max(mostSessions, planning.model.sessions.count)
                useIndex += 1
            } else {
                now = next
                let failed = random.unit() < failureRate
                planning.fetched(at: next, failed: failed)
                if !failed { fresh = next }
            }
        }
        let attempts = planning.attempts
        let adaptive = Self.metrics(staleness: staleness, fetches: attempts.count, days: days)
        let byWeek = (0..<Int((days / 7).rounded(.up))).map { week -> Double in
            let from = start.addingTimeInterval(Double(week) * 604_800)
            let inWeek = zip(uses, staleness).filter { $0.0.date >= from && $0.0.date < from.addingTimeInterval(604_800) }
            return inWeek.isEmpty ? 1 : Double(inWeek.filter { $0.1 <= Self.freshSeconds }.count) / Double(inWeek.count)
        }
        return Report(
            adaptive: adaptive,
            fixedInterval: Self.fixedInterval(uses, fetches: attempts.count, start: start, end: end, days: days),
            oracle: Self.metrics(staleness: uses.map { _ in 0 }, fetches: uses.count, days: days),
            freshAtUseByWeek: byWeek,
            planningMicroseconds: Double(planningTime / .microseconds(1)) / Double(max(1, decisions)),
            learnedStateBytes: mostSessions * MemoryLayout<UsageEvent>.stride,
            fetchTimes: attempts)
    }

    /// Evenly spaced fetches from `start`, `fetches` of them over the trace.
    static func fixedInterval(_ uses: [UsageEvent], fetches: Int, start: Date, end: Date, days: Double) -> Metrics {
        let interval = end.timeIntervalSince(start) / Double(max(1, fetches))
        let staleness = uses.map { $0.date.timeIntervalSince(start).truncatingRemainder(dividingBy: interval) }
        return metrics(staleness: staleness, fetches: fetches, days: days)
    }

    static func metrics(staleness: [Double], fetches: Int, days: Double) -> Metrics {
        let sorted = staleness.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))] / 60
        }
        return Metrics(
            uses: staleness.count, fetches: fetches, fetchesPerDay: Double(fetches) / days,
            wakesPerDay: Double(fetches) / days,
            medianStalenessMinutes: percentile(0.5), p90StalenessMinutes: percentile(0.9),
            meanStalenessMinutes: sorted.isEmpty ? 0 : sorted.reduce(0, +) / Double(sorted.count) / 60,
            freshAtUse: sorted.isEmpty ? 1 : Double(sorted.filter { $0 <= freshSeconds }.count) / Double(sorted.count))
    }
}

/// A small deterministic generator (SplitMix64), so simulated failures repeat exactly.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    /// A number in [0, 1).
    mutating func unit() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
    }
}
