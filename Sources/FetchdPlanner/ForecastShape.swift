/// What the shape of a day's forecast says about planning on it: which planned fetches count
/// against the budget, whether its uses are diffuse, and the forecast smoothed. Pure functions
/// of the forecast (expected uses per bin).
enum ForecastShape {
    /// The least share a planned fetch counts against the budget, however likely its episode's
    /// use is to have come before it (a plan of free fetches would have no end).
    static let leastMadeShare = 0.4
    /// A forecast whose busiest bins holding half its uses number more than this is diffuse:
    /// uses scattered over the day, no habit to fetch just before.
    static let diffuseBinsForHalf = 16

    /// For each bin, the share of a fetch planned there that counts against the budget: the
    /// chance it is made. Within a habit episode (about one use, see `UsageModel.forecast`) the
    /// use damps the rest of the episode once it comes, so the fetches planned after it are not
    /// made; a late fetch of a chain through the episode costs only the chance that the use has
    /// not come by then. Counting every planned fetch as made left a fifth of the budget unspent
    /// on the habit traces, and the chains short.
    static func madeShare(_ expected: [Double]) -> [Double] {
        var made = Array(repeating: 1.0, count: expected.count)
        var index = 0
        while index < expected.count {
            guard expected[index] > UsageModel.backgroundPerBin else { index += 1; continue }
            let first = index
            while index < expected.count && expected[index] > UsageModel.backgroundPerBin { index += 1 }
            guard expected[first..<index].reduce(0, +) <= UsageModel.singleUseMass else { continue }
            var before = 0.0
            for bin in first..<index {
                made[bin] = max(leastMadeShare, 1 - before)
                before += expected[bin]
            }
        }
        return made
    }

    /// Whether the forecast's uses are scattered: its busiest `diffuseBinsForHalf` bins hold less
    /// than half of them (a habit's few episodes hold half in well under that).
    static func isDiffuse(_ expected: [Double]) -> Bool {
        let total = expected.reduce(0, +)
        guard total > 0 else { return false }
        let busiest = expected.sorted(by: >).prefix(diffuseBinsForHalf).reduce(0, +)
        return busiest < total / 2
    }

    /// The forecast averaged over `radius` bins on each side.
    static func smoothed(_ expected: [Double], radius: Int) -> [Double] {
        var prefix = [0.0]
        prefix.reserveCapacity(expected.count + 1)
        for value in expected { prefix.append(prefix[prefix.count - 1] + value) }
        return expected.indices.map { bin in
            let low = max(0, bin - radius), high = min(expected.count, bin + radius + 1)
            return (prefix[high] - prefix[low]) / Double(2 * radius + 1)
        }
    }
}
