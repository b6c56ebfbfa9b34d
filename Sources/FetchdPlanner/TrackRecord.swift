import Foundation

/// What the plan gave the user over their own recent past, beside what a fixed interval with
/// as many fetches would have given them: the evidence the safeguard acts on.
public struct TrackRecord: Sendable, Equatable {
    /// Uses (sessions) on the plan's days of the window, after its first fetch.
    public var uses = 0
    /// Of those, the uses at most `freshSeconds` after the latest fetch before them.
    public var freshUses = 0
    /// The uses a fixed interval with as many fetches over the same stretch would have served
    /// fresh, on average over its phase: `uses` × `freshSeconds` / the interval.
    public var intervalFreshUses = 0.0

    /// No track record: nothing to act on.
    public init() {}

    /// The record of `sessions` against `freshFetches` (when the content became fresh:
    /// successful fetches, oldest first) over the `windowSeconds` before `now`, leaving
    /// out the uses of the local days `skipping` names (the days a fixed interval served:
    /// counting them would measure the interval, not the plan).
    public init(sessions: [UsageEvent], freshFetches: [Date], now: Date, skipping: (Int) -> Bool = { _ in false }) {
        let from = now.addingTimeInterval(-Self.windowSeconds)
        let fetches = freshFetches.drop { $0 < from }.prefix { $0 < now }
        guard let first = fetches.first else { return }
        var staleness: [Double] = []
        var next = fetches.startIndex, latest = first
        for session in sessions where session.date >= first && session.date < now {
            while next < fetches.endIndex, fetches[next] <= session.date {
                latest = fetches[next]
                next += 1
            }
            guard !skipping(LocalTime(session.date, offsetSeconds: session.utcOffsetSeconds).dayNumber) else { continue }
            staleness.append(session.date.timeIntervalSince(latest))
        }
        guard !staleness.isEmpty else { return }
        let interval = now.timeIntervalSince(first) / Double(fetches.count)
        uses = staleness.count
        freshUses = staleness.reduce(0) { $1 <= FetchPlanner.freshSeconds ? $0 + 1 : $0 }
        intervalFreshUses = Double(uses) * min(1, FetchPlanner.freshSeconds / interval)
    }

    /// How far back the safeguard looks, in seconds: the model's memory (eight weeks), so that
    /// the plan's own days (a quarter of them) of a person with three uses a day hold some five
    /// uses an interval would serve fresh.
    /// The daemon keeps `Defaults.historyKeepPerHandler` results a handler: above about 17
    /// fetches a day its record is shorter.
    public static let windowSeconds = 56 * 86_400.0

    /// From when a caller deciding at `now` passes the successful fetches
    /// (`Feedback.freshFetches`): the record ends at today's local midnight, so a day more than
    /// `windowSeconds` covers it whatever the time of day.
    public static func start(now: Date) -> Date { now.addingTimeInterval(-windowSeconds - 86_400) }
}
