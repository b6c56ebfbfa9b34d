/// A fetch budget as written in the config (`budget`, `global_budget`): a count per day, hour
/// or week.
public enum FetchBudget {
    /// `12/day`, `1/hour`, `20/week` as fetches per day (1 to `maximum`), or nil.
    public static func perDay(_ text: String, maximum: Int = 1440) -> Int? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Double(parts[0]), count > 0, count.isFinite else { return nil }
        let perDay: Double
        switch parts[1] {
        case "day", "d": perDay = count
        case "hour", "h": perDay = count * 24
        case "week", "w": perDay = count / 7
        default: return nil
        }
        // Checked before converting: Int(1e300) would trap.
        guard perDay.rounded() >= 1, perDay.rounded() <= Double(maximum) else { return nil }
        return Int(perDay.rounded())
    }
}
