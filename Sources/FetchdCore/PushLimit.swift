/// How many push wakes a handler takes: at most `count` push fetches in any window of
/// `windowSeconds` (iOS rate-limits silent pushes the same way). Pushes over the limit are
/// coalesced into one deferred fetch at the earliest time the window allows.
public struct PushLimit: Sendable, Equatable, CustomStringConvertible {
    /// Push fetches allowed per window.
    public var count: Int
    /// The rolling window, in seconds.
    public var windowSeconds: Double

    /// The longest window accepted, in seconds: push times are kept for a day.
    public static let maxWindowSeconds = 86_400.0
    /// The most pushes accepted per window.
    public static let maxCount = 1000

    /// A limit of `count` per `windowSeconds`.
    public init(count: Int, windowSeconds: Double) {
        self.count = count
        self.windowSeconds = windowSeconds
    }

    /// The default, `Defaults.pushLimitCount` per `Defaults.pushLimitWindowSeconds`.
    public static let standard = PushLimit(count: Defaults.pushLimitCount, windowSeconds: Defaults.pushLimitWindowSeconds)

    /// Parses `6/hour`, `2/minute`, `20/day` or `N/DURATION` such as `1/10s` or `3/15m`, like
    /// `budget`; nil when the text is not of that form or out of range (1 to 1000 per window of
    /// 1 s to 1 day).
    public static func parse(_ text: String) -> PushLimit? {
        let parts = text.trimmingWhitespace().split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Int(parts[0]), (1...maxCount).contains(count) else { return nil }
        let window: Double
        switch parts[1] {
        case "minute": window = 60
        case "hour": window = 3600
        case "day": window = 86_400
        default:
            guard let seconds = try? HumanDuration.parseSeconds(String(parts[1])) else { return nil }
            window = seconds
        }
        guard window >= 1, window <= maxWindowSeconds else { return nil }
        return PushLimit(count: count, windowSeconds: window)
    }

    /// `6/hour`, `2/minute`, `1/10s`: the form `parse` reads.
    public var description: String {
        switch windowSeconds {
        case 60: "\(count)/minute"
        case 3600: "\(count)/hour"
        case 86_400: "\(count)/day"
        default: "\(count)/\(HumanDuration.format(seconds: windowSeconds))"
        }
    }
}
