@testable import FetchdPlanner
import Foundation
import Testing

/// The greedy plan scores again only the candidates whose neighbours changed after each choice.
/// Checked against the plain greedy, which scores every candidate against every chosen fetch
/// each round, on random forecasts, limits and latest fetches: both must choose the same times.
struct GreedyPlanTests {
    /// The plain greedy: the plan's times relative to `now`, earliest first.
    static func reference(expected: [Double], cost weights: FetchPlanner.Cost, limits: FetchPlanner.Limits,
                          last: Double?, earliest: Double) -> [Double] {
        let count = expected.count, binSeconds = FetchPlanner.binSeconds
        var mass = [0.0], moment = [0.0]
        for index in 0..<count {
            mass.append(mass[index] + expected[index])
            moment.append(moment[index] + expected[index] * (Double(index) + 0.5) * binSeconds)
        }
        func capped(_ from: Int, _ to: Int, _ fetch: Double, _ limit: Double) -> Double {
            guard from < to else { return 0 }
            let split = min(to, max(from, Int(((fetch + limit) / binSeconds - 0.5).rounded(.down)) + 1))
            return (moment[split] - moment[from]) - fetch * (mass[split] - mass[from]) + limit * (mass[to] - mass[split])
        }
        /// Expected uses in bins [from, to) whose middle is more than `limit` after the fetch.
        func stale(_ from: Int, _ to: Int, _ fetch: Double, _ limit: Double) -> Double {
            (from..<max(from, to)).filter { (Double($0) + 0.5) * binSeconds - fetch > limit }.reduce(0) { $0 + expected[$1] }
        }
        func cost(_ from: Int, _ to: Int, _ fetch: Double) -> Double {
            weights.spreadWeight * capped(from, to, fetch, weights.spreadCapSeconds)
                + weights.cappedWeight * capped(from, to, fetch, FetchPlanner.stalenessCapSeconds)
                + weights.staleWeight * FetchPlanner.stalenessCapSeconds * stale(from, to, fetch, FetchPlanner.freshSeconds)
        }
        var chosen: [(time: Double, bin: Int)] = [(last ?? -FetchPlanner.stalenessCapSeconds, 0)]
        let made = ForecastShape.madeShare(expected)
        let reach = Int(weights.spreadCapSeconds / binSeconds) + 1
        var candidates = (0..<count).filter { mass[min(count, $0 + reach)] - mass[$0] > 1e-4 }
        var spent = 0.0
        while spent < Double(limits.budgetPerDay), chosen.count <= FetchPlanner.mostPlannedPerBudget * limits.budgetPerDay {
            var best: (gain: Double, bin: Int)?
            for bin in candidates {
                let fetch = Double(bin) * binSeconds - limits.leadSeconds
                guard fetch >= earliest, !chosen.contains(where: { abs($0.time - fetch) < limits.minIntervalSeconds })
                else { continue }
                var beforeTime = chosen[0].time, beforeBin = -1, after = count
                for other in chosen {
                    if other.bin <= bin {
                        if other.bin > beforeBin || (other.bin == beforeBin && other.time > beforeTime) {
                            (beforeBin, beforeTime) = (other.bin, other.time)
                        }
                    } else {
                        after = min(after, other.bin)
                    }
                }
                let gain = cost(bin, after, beforeTime) - cost(bin, after, fetch)
                if gain > (best?.gain ?? 1e-6) { best = (gain, bin) }
            }
            guard let best else { break }
            chosen.append((Double(best.bin) * binSeconds - limits.leadSeconds, best.bin))
            spent += made[best.bin]
            candidates.removeAll { $0 == best.bin }
        }
        return chosen.dropFirst().map(\.time).sorted()
    }

    @Test func itChoosesWhatScoringEveryCandidateEveryRoundChooses() {
        var random = SplitMix(seed: 7)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for round in 0..<300 {
            // A background, a few habit peaks of about one use each, sometimes a busy stretch.
            var expected = (0..<FetchPlanner.horizonBins).map { _ in random.unit() < 0.7 ? 0 : 0.002 * random.unit() }
            for _ in 0..<Int(random.unit() * 5) {
                let center = Int(random.unit() * Double(expected.count)), width = 1 + Int(random.unit() * 8)
                for offset in -width...width where expected.indices.contains(center + offset) {
                    expected[center + offset] += exp(-Double(offset * offset) / Double(2 * width * width)) / Double(width)
                }
            }
            if random.unit() < 0.2 { for bin in 100..<160 { expected[bin] += 0.05 } }
            let limits = FetchPlanner.Limits(
                budgetPerDay: [1, 3, 6, 12, 24][Int(random.unit() * 5)],
                minIntervalSeconds: [0, 300, 1_500, 7_200][Int(random.unit() * 4)], maxStalenessSeconds: 86_400,
                leadSeconds: [0, 120, 600][Int(random.unit() * 3)])
            let last: Double? = random.unit() < 0.2 ? nil : -random.unit() * 10_000
            let earliest = random.unit() < 0.5 ? 0 : random.unit() * 7_200
            let cost = [FetchPlanner.Cost.habit, .diffuse, .scattered][Int(random.unit() * 3)]
            let plan = GreedyPlan(limits: limits, shaped: (expected, cost), past: last.map { [now.addingTimeInterval($0)] } ?? [],
                                  floor: now.addingTimeInterval(earliest), latestUse: nil).decisions(now: now)
            let want = Self.reference(expected: expected, cost: cost, limits: limits, last: last, earliest: earliest)
            #expect(plan.map { $0.date.timeIntervalSince(now) } == want, "round \(round), \(limits)")
        }
    }
}
