import Foundation

/// The planner's search over the next 24 hours: fetches chosen one at a time, each where it
/// saves the most expected staleness (as the shaped forecast's cost weighs it), until the
/// budget of fetches expected to be made is spent. Its optimum is checked against a brute-force
/// reference in GreedyPlanTests.
struct GreedyPlan {
    /// The budget, `min_interval` and lead the plan keeps to.
    var limits: FetchPlanner.Limits
    /// Expected uses per 5-minute bin from now, and how their staleness is weighed.
    var shaped: (expected: [Double], cost: FetchPlanner.Cost)
    /// The recent fetches, oldest first; the last is the latest content's.
    var past: [Date]
    /// The earliest moment a fetch may be planned at (`min_interval`, the rolling budget).
    var floor: Date
    /// The latest use: a fetch a day after it is paced, and reasons show its local time.
    var latestUse: UsageEvent?

    /// Fetch times, earliest first, each with its reason; only the `first` earliest of them.
    func decisions(now: Date, first: Int = .max) -> [FetchPlanner.Decision] {
        // Only the first planned fetch is ever made before the plan is made again, and `floor`
        // holds it to the rolling budget; holding every later one to it too made plans worse
        // on every trace and decisions twice as slow.
        let last = past.last
        let latestUse = self.latestUse?.date, offsetSeconds = self.latestUse?.utcOffsetSeconds ?? 0
        let (expected, weights) = shaped
        let count = expected.count
        // Times relative to `now`, in seconds; use k is at the middle of bin k.
        let useTime = (0..<count).map { (Double($0) + 0.5) * FetchPlanner.binSeconds }
        var mass = [0.0], moment = [0.0]  // prefix sums of d and d * t
        for index in 0..<count {
            mass.append(mass[index] + expected[index])
            moment.append(moment[index] + expected[index] * useTime[index])
        }
        let cap = FetchPlanner.stalenessCapSeconds
        /// Σ d_k * min(t_k - fetch, limit) for uses in bins [from, to).
        /// The first bin of [from, to) whose use is more than `limit` after the fetch.
        func split(from: Int, to: Int, fetch: Double, limit: Double) -> Int {
            min(to, max(from, Int(((fetch + limit) / FetchPlanner.binSeconds - 0.5).rounded(.down)) + 1))
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
                total += weights.staleWeight * cap * stale(from: from, to: to, fetch: fetch, limit: FetchPlanner.freshSeconds)
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
        let made = ForecastShape.madeShare(expected)
        var spent = 0.0
        // A fetch can only help uses after it: bins with no expected use in the next `cap` are
        // never worth a fetch, and most of a day is such bins.
        let reach = Int(weights.spreadCapSeconds / FetchPlanner.binSeconds) + 1
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
        let awayFrom = latestUse.map { $0.timeIntervalSince(now) + FetchPlanner.awayAfterSeconds } ?? .infinity
        let pacedFrom = lastTime + FetchPlanner.awayIntervalSeconds
        func plannedTime(_ bin: Int) -> Double { Double(bin) * FetchPlanner.binSeconds - limits.leadSeconds }
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
        while spent < budget, chosen.count <= FetchPlanner.mostPlannedPerBudget * limits.budgetPerDay {
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
            let useAt = now.addingTimeInterval(useTime[peak] - FetchPlanner.binSeconds / 2)
            let date = now.addingTimeInterval(fetch.time)
            return FetchPlanner.Decision(
                date: date,
                reason: FetchPlanner.awayPrefix(date, latestUse: latestUse) + "predicted use \(FetchPlanner.weekdayAndTime(useAt, offsetSeconds: offsetSeconds)) (p=\(String(format: "%.2f", probability))), "
                    + "lead \(FetchPlanner.text(useAt.timeIntervalSince(now.addingTimeInterval(fetch.time))))")
        }
    }
}
