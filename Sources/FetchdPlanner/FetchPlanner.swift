import Foundation

/// Chooses a handler's next fetch: just before its predicted uses, within its budget.
///
/// It plans the next 24 hours greedily. Each candidate fetch time is scored by how much it
/// lowers the expected staleness of the content at the moments of use (capped, so that far-off
/// uses do not dominate); the best is taken, and so on until the budget for the day is spent.
/// The earliest planned fetch is the answer; after every fetch and every use the plan is made
/// again, so it follows what the user does. Prefix sums make each score O(1): a decision costs
/// a few thousand operations, whatever the length of the history.
public struct FetchPlanner: Sendable {
    /// The limits a plan respects.
    public struct Limits: Sendable, Equatable {
        /// Fetches per rolling 24 hours.
        public var budgetPerDay: Int
        /// The least time between two fetches, in seconds.
        public var minIntervalSeconds: Double
        /// The content is never older than this, predicted use or not, in seconds.
        public var maxStalenessSeconds: Double
        /// How long before the moment it serves a fetch is made, in seconds.
        public var leadSeconds: Double

        /// Creates limits.
        public init(budgetPerDay: Int, minIntervalSeconds: Double, maxStalenessSeconds: Double, leadSeconds: Double = 120) {
            self.budgetPerDay = max(1, budgetPerDay)
            self.minIntervalSeconds = max(0, minIntervalSeconds)
            self.maxStalenessSeconds = max(60, maxStalenessSeconds)
            self.leadSeconds = max(0, leadSeconds)
        }
    }

    /// A decision and why it was made (shown by `fetchctl`).
    public struct Decision: Sendable, Equatable {
        /// When to fetch.
        public var date: Date
        /// Why: "predicted use Tue 08:55 (p=0.62), lead 2 min", "cold start: every 2 h", ...
        public var reason: String

        /// Creates a decision.
        public init(date: Date, reason: String) {
            self.date = date
            self.reason = reason
        }
    }

    /// Staleness beyond this counts as this much (seconds): a fetch is for the uses it serves soon.
    static let stalenessCapSeconds = 20.0 * 60
    /// Content at most this old at a use is fresh (seconds), as the learning bench scores it.
    public static let freshSeconds = 15.0 * 60
    /// No use for this long (seconds) and the user is away: a day, so that one skipped habit
    /// does not count.
    static let awayAfterSeconds = 86_400.0
    /// While the user is away, fetches at least this far apart (seconds): the budget is not spent
    /// on nobody, while the content stays within a few hours of fresh when they come back
    /// (bench/README.md, "Away pacing", has what it costs and saves on real usage).
    static let awayIntervalSeconds = 3 * 3600.0
    static let horizonBins = 24 * 60 / UsageModel.binMinutes
    static let binSeconds = Double(UsageModel.binMinutes * 60)

    /// The limits in force.
    public var limits: Limits
    /// How uses with no habit are forecast (`fetchctl simulate --policy` compares them).
    public var policy = Policy.learned
    /// The local clock's UTC offset at a moment (the daemon passes its time zone's); nil: the
    /// offset of the latest use, which is what a replayed trace has.
    public var localOffset: (@Sendable (Date) -> Int)?

    /// Creates a planner.
    public init(limits: Limits) { self.limits = limits }

    /// The next fetch after `now`, given the model and the times of recent fetches (oldest first;
    /// the last is the latest content's fetch).
    public func next(now: Date, model: UsageModel, recentFetches: [Date]) -> Decision {
        let last = recentFetches.last
        let floor = earliestAllowed(now: now, recentFetches: recentFetches)
        let ceiling = last.map { $0.addingTimeInterval(limits.maxStalenessSeconds) }
        guard let shaped = forecastToPlan(now: now, model: model) else {
            let interval = max(limits.minIntervalSeconds, 86_400 / Double(limits.budgetPerDay))
            let date = max(floor, last.map { $0.addingTimeInterval(interval) } ?? now)
            return Decision(date: date, reason: "cold start (\(model.daysOfUse) day(s) of use): every \(Self.text(interval))")
        }
        // Only the first planned fetch is made; the rest are not described (a reason per
        // planned fetch was a tenth of a decision's cost).
        let plan = greedyPlan(now: now, shaped: shaped, past: recentFetches, floor: floor,
                              offsetSeconds: model.sessions.last?.utcOffsetSeconds ?? 0, latestUse: model.sessions.last?.date,
                              first: 1)
        guard var first = plan.first else {
            let date = max(floor, ceiling ?? now.addingTimeInterval(Double(Self.horizonBins) * Self.binSeconds))
            return Decision(date: date, reason: "no use predicted in the next 24 h: max_staleness")
        }
        if let ceiling, first.date > ceiling {
            return Decision(date: max(floor, ceiling), reason: "max_staleness \(Self.text(limits.maxStalenessSeconds))")
        }
        first.reason = Self.coldStartPrefix(model) + first.reason
        return first
    }

    /// The fetches planned for the next 24 hours, earliest first (what `fetchctl usage` shows);
    /// empty while the plan is a plain interval.
    public func plan(now: Date, model: UsageModel, recentFetches: [Date]) -> [Decision] {
        guard let shaped = forecastToPlan(now: now, model: model) else { return [] }
        let prefix = Self.coldStartPrefix(model)
        return greedyPlan(now: now, shaped: shaped, past: recentFetches,
                          floor: earliestAllowed(now: now, recentFetches: recentFetches),
                          offsetSeconds: model.sessions.last?.utcOffsetSeconds ?? 0, latestUse: model.sessions.last?.date)
            .map { Decision(date: $0.date, reason: prefix + $0.reason) }
    }

    /// What a reason starts with when the fetch comes after a day without use.
    static func awayPrefix(_ date: Date, latestUse: Date?) -> String {
        guard let latestUse, date.timeIntervalSince(latestUse) >= awayAfterSeconds else { return "" }
        return "no use for a day: at most every \(text(awayIntervalSeconds)); "
    }

    /// What a reason starts with while the model is not warm (planned on the population's hours).
    static func coldStartPrefix(_ model: UsageModel) -> String {
        model.isWarm ? "" : "cold start (\(model.daysOfUse) day(s) of use, people's usual hours): "
    }

    /// What to plan on: `shapedForecast` once the model is warm; before that, under
    /// `Policy.learned`, the population's hours of use at the user's own rate and the time since
    /// the latest use (`UsageModel.scatteredForecast`, whose prior carries the first days); nil
    /// for a plain interval (no use seen yet, or another policy).
    func forecastToPlan(now: Date, model: UsageModel) -> (expected: [Double], cost: Cost)? {
        if model.isWarm { return shapedForecast(now: now, model: model) }
        guard policy == .learned, !model.sessions.isEmpty else { return nil }
        return (model.scatteredForecast(from: now, bins: Self.horizonBins, localOffset: localOffset), .scattered)
    }

    /// The earliest moment the floor (`min_interval`) and the rolling budget allow.
    public func earliestAllowed(now: Date, recentFetches: [Date]) -> Date {
        var floor = now
        if let last = recentFetches.last { floor = max(floor, last.addingTimeInterval(limits.minIntervalSeconds)) }
        if recentFetches.count >= limits.budgetPerDay {
            let oldestCounted = recentFetches[recentFetches.count - limits.budgetPerDay]
            floor = max(floor, oldestCounted.addingTimeInterval(86_400))
        }
        return floor
    }

    /// Greedy plan over the horizon: fetch times, earliest first, each with its reason; only the
    /// `first` earliest of them.
    func greedyPlan(now: Date, shaped: (expected: [Double], cost: Cost), past: [Date], floor: Date,
                    offsetSeconds: Int, latestUse: Date?, first: Int = .max) -> [Decision] {
        // Only the first planned fetch is ever made before the plan is made again, and `floor`
        // holds it to the rolling budget; holding every later one to it too made plans worse
        // on every trace and decisions twice as slow.
        let last = past.last
        let (expected, weights) = shaped
        let count = expected.count
        // Times relative to `now`, in seconds; use k is at the middle of bin k.
        let useTime = (0..<count).map { (Double($0) + 0.5) * Self.binSeconds }
        var mass = [0.0], moment = [0.0]  // prefix sums of d and d * t
        for index in 0..<count {
            mass.append(mass[index] + expected[index])
            moment.append(moment[index] + expected[index] * useTime[index])
        }
        let cap = Self.stalenessCapSeconds
        /// Σ d_k * min(t_k - fetch, limit) for uses in bins [from, to).
        /// The first bin of [from, to) whose use is more than `limit` after the fetch.
        func split(from: Int, to: Int, fetch: Double, limit: Double) -> Int {
            min(to, max(from, Int(((fetch + limit) / Self.binSeconds - 0.5).rounded(.down)) + 1))
        }
        func capped(from: Int, to: Int, fetch: Double, limit: Double) -> Double {
            guard from < to else { return 0 }
            // Bins whose use is within `limit` of the fetch pay their staleness, the rest pay limit.
            let split = split(from: from, to: to, fetch: fetch, limit: limit)
            let near = (moment[split] - moment[from]) - fetch * (mass[split] - mass[from])
            return near + limit * (mass[to] - mass[split])
        }
        /// Expected uses in bins [from, to) older than `limit` at use.
        func stale(from: Int, to: Int, fetch: Double, limit: Double) -> Double {
            guard from < to else { return 0 }
            return mass[to] - mass[split(from: from, to: to, fetch: fetch, limit: limit)]
        }
        /// Mostly "was it fresh" (staleness capped near the fresh limit, or uses not fresh), plus
        /// some of the longer staleness, so that uses with no clear habit still get spread fetches.
        func cost(from: Int, to: Int, fetch: Double) -> Double {
            var total = weights.spreadWeight * capped(from: from, to: to, fetch: fetch, limit: weights.spreadCapSeconds)
            if weights.cappedWeight > 0 {
                total += weights.cappedWeight * capped(from: from, to: to, fetch: fetch, limit: cap)
            }
            if weights.staleWeight > 0 {
                total += weights.staleWeight * cap * stale(from: from, to: to, fetch: fetch, limit: Self.freshSeconds)
            }
            return total
        }
        // Fetches chosen so far: (time relative to now, first bin they serve). The latest real
        // fetch serves from bin 0.
        var chosen: [(time: Double, bin: Int)] = [(last.map { $0.timeIntervalSince(now) } ?? -cap, 0)]
        let earliest = floor.timeIntervalSince(now)
        // The budget counts the fetches expected to be made: a late fetch of a chain through a
        // habit is made only if the use has not come yet (see `madeShare`).
        let budget = Double(limits.budgetPerDay)
        let made = Self.madeShare(expected)
        var spent = 0.0
        // A fetch can only help uses after it: bins with no expected use in the next `cap` are
        // never worth a fetch, and most of a day is such bins.
        let reach = Int(weights.spreadCapSeconds / Self.binSeconds) + 1
        var candidates = (0..<count).filter { mass[min(count, $0 + reach)] - mass[$0] > 1e-4 }
        // The planned bins in order: a candidate's neighbours among them are the fetches that
        // serve it now (before) and the next one's first bin (after), and the only ones that can
        // be within min_interval of it (planned times rise with their bins). A candidate's gain
        // depends on nothing else, so after each choice only the candidates between the chosen
        // bin's neighbours are scored again; scoring every candidate against every chosen fetch
        // each round was most of a decision's cost.
        var plannedBins: [Int] = []
        let lastTime = chosen[0].time, minInterval = limits.minIntervalSeconds
        // From a day after the latest use, the next fetch waits `awayIntervalSeconds` after the
        // latest one.
        let awayFrom = latestUse.map { $0.timeIntervalSince(now) + Self.awayAfterSeconds } ?? .infinity
        let pacedFrom = lastTime + Self.awayIntervalSeconds
        func plannedTime(_ bin: Int) -> Double { Double(bin) * Self.binSeconds - limits.leadSeconds }
        /// The gain of a fetch planned in `bin`, nil where none may be; `next` indexes the first planned bin after it.
        func gain(_ bin: Int, next: Int) -> Double? {
            let fetch = plannedTime(bin)
            guard fetch >= earliest, abs(lastTime - fetch) >= minInterval else { return nil }
            if fetch >= awayFrom, fetch < pacedFrom { return nil }
            let previous = next > 0 ? plannedBins[next - 1] : nil
            let following = next < plannedBins.count ? plannedBins[next] : nil
            if let previous, abs(plannedTime(previous) - fetch) < minInterval { return nil }
            if let following, abs(plannedTime(following) - fetch) < minInterval { return nil }
            // A fetch planned in bin 0 serves before the latest real fetch only if it comes after it.
            let beforeTime = previous.flatMap { $0 > 0 || plannedTime($0) > lastTime ? plannedTime($0) : nil } ?? lastTime
            let after = following ?? count
            return cost(from: bin, to: after, fetch: beforeTime) - cost(from: bin, to: after, fetch: fetch)
        }
        var gains = candidates.map { gain($0, next: 0) }
        while spent < budget, chosen.count <= Self.mostPlannedPerBudget * limits.budgetPerDay {
            var best: (gain: Double, index: Int)?
            for (index, candidate) in gains.enumerated() {
                if let candidate, candidate > (best?.gain ?? 1e-6) { best = (candidate, index) }
            }
            guard let best else { break }
            let bin = candidates[best.index]
            chosen.append((plannedTime(bin), bin))
            spent += made[bin]
            candidates.remove(at: best.index)
            gains.remove(at: best.index)
            let position = plannedBins.firstIndex { $0 > bin } ?? plannedBins.count
            plannedBins.insert(bin, at: position)
            // Score again the candidates between the new fetch's planned neighbours.
            let low = position > 0 ? plannedBins[position - 1] : -1
            let high = position + 1 < plannedBins.count ? plannedBins[position + 1] : count
            var index = candidates.firstIndex { $0 > low } ?? candidates.count
            while index < candidates.count && candidates[index] < high {
                gains[index] = gain(candidates[index], next: candidates[index] < bin ? position : position + 1)
                index += 1
            }
        }
        let planned = chosen.dropFirst().sorted { $0.time < $1.time }
        return planned.prefix(first).map { fetch in
            let served = chosen.filter { $0.bin > fetch.bin }.map(\.bin).min() ?? count
            let window = fetch.bin..<min(served, fetch.bin + 12)
            let peak = window.max { expected[$0] < expected[$1] } ?? fetch.bin
            let probability = min(1, window.reduce(0) { $0 + expected[$1] })
            let useAt = now.addingTimeInterval(useTime[peak] - Self.binSeconds / 2)
            let date = now.addingTimeInterval(fetch.time)
            return Decision(
                date: date,
                reason: Self.awayPrefix(date, latestUse: latestUse) + "predicted use \(Self.weekdayAndTime(useAt, offsetSeconds: offsetSeconds)) (p=\(String(format: "%.2f", probability))), "
                    + "lead \(Self.text(useAt.timeIntervalSince(now.addingTimeInterval(fetch.time))))")
        }
    }

    /// `Tue 08:55`, local time at `offsetSeconds`.
    static func weekdayAndTime(_ date: Date, offsetSeconds: Int) -> String {
        let local = LocalTime(date, offsetSeconds: offsetSeconds)
        let names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        let hour = local.minuteOfDay / 60, minute = local.minuteOfDay % 60
        return "\(names[local.weekday]) \(hour < 10 ? "0" : "")\(hour):\(minute < 10 ? "0" : "")\(minute)"
    }

    /// `2 h`, `15 min`, `45 s`.
    static func text(_ seconds: Double) -> String {
        if seconds >= 3600, seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600)) h" }
        if seconds >= 60 { return "\(Int((seconds / 60).rounded())) min" }
        return "\(Int(seconds.rounded())) s"
    }
}
