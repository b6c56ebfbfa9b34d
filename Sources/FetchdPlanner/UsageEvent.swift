import Foundation

/// One use of a handler's content: when, and the UTC offset of the local clock at that moment
/// (so habits are learned in local time, across time zones and daylight-saving changes).
public struct UsageEvent: Sendable, Equatable, Comparable {
    /// The instant of the use.
    public var date: Date
    /// The local clock's offset from UTC at that instant, in seconds.
    public var utcOffsetSeconds: Int

    /// Creates an event.
    public init(date: Date, utcOffsetSeconds: Int) {
        self.date = date
        self.utcOffsetSeconds = utcOffsetSeconds
    }

    /// Orders by instant.
    public static func < (lhs: UsageEvent, rhs: UsageEvent) -> Bool { lhs.date < rhs.date }

    /// Minutes since local midnight, 0..<1440.
    public var localMinuteOfDay: Int { LocalTime(date, offsetSeconds: utcOffsetSeconds).minuteOfDay }

    /// Local day of the week, 0 = Monday ... 6 = Sunday.
    public var localWeekday: Int { LocalTime(date, offsetSeconds: utcOffsetSeconds).weekday }
}

/// Wall-clock fields of an instant at a fixed UTC offset, computed without calendars or ICU.
public struct LocalTime: Sendable {
    /// Minutes since local midnight.
    public var minuteOfDay: Int
    /// 0 = Monday ... 6 = Sunday.
    public var weekday: Int
    /// Days since 1970-01-01 in local time.
    public var dayNumber: Int

    /// The local fields of `date` at `offsetSeconds` from UTC.
    public init(_ date: Date, offsetSeconds: Int) {
        let local = Int((date.timeIntervalSince1970).rounded(.down)) + offsetSeconds
        let (day, second) = local.quotientAndRemainder(dividingBy: 86_400)
        let dayNumber = second < 0 ? day - 1 : day
        let secondOfDay = second < 0 ? second + 86_400 : second
        self.dayNumber = dayNumber
        minuteOfDay = secondOfDay / 60
        // 1970-01-01 was a Thursday (3 when Monday is 0).
        weekday = ((dayNumber % 7) + 7 + 3) % 7
    }
}
