import Foundation
import Glibc

/// Writes and reads HTTP dates (RFC 9110 section 5.6.7) without Foundation's `DateFormatter`
/// (ICU on Linux, see `SystemTimeZone`). Written: the IMF-fixdate. Read: the IMF-fixdate
/// servers must send (`Sun, 06 Nov 1994 08:49:37 GMT`) and the two obsolete forms recipients
/// must still accept, RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`).
///
/// Lenient where leniency costs nothing: spaces and commas between fields may be doubled, the
/// weekday is not checked against the date, and `UTC` is taken for `GMT` (some servers send it).
/// Strict where a wrong reading would move the date: every number is digits only, in range,
/// and the day must exist in its month.
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// `date` as an IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT` (to the second, rounded down).
    public static func text(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        var text = DigitText(capacity: 29)
        text.appendASCII(weekdayNames[Int(parts.tm_wday)] + ", ")
        text.append(Int(parts.tm_mday), width: 2)
        text.appendASCII(" " + monthNames[Int(parts.tm_mon)] + " ")
        text.append(Int(parts.tm_year) + 1900, width: 4)
        text.append(" ")
        text.append(Int(parts.tm_hour), width: 2)
        text.append(":")
        text.append(Int(parts.tm_min), width: 2)
        text.append(":")
        text.append(Int(parts.tm_sec), width: 2)
        text.appendASCII(" GMT")
        return text.text
    }

    /// The date `text` names, or nil for anything else (another zone than GMT or UTC, a day the
    /// month does not have, a field out of range). `now` decides the century of an RFC 850 year.
    public static func parse(_ text: String, now: Date = Date()) -> Date? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        let day: String, month: String, year: Int?, time: String, zone: String
        switch fields.count {
        case 6:  // IMF-fixdate: weekday, day, month, year, time, GMT
            (day, month, year, time, zone) = (fields[1], fields[2], number(fields[3]), fields[4], fields[5])
            guard fields[3].count == 4 else { return nil }
        case 4:  // RFC 850: weekday, day-month-yy, time, GMT
            let parts = fields[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, parts[2].count == 2, let yy = number(parts[2]) else { return nil }
            (day, month, year, time, zone) = (parts[0], parts[1], centuryOf(yy, now: now), fields[2], fields[3])
        case 5:  // asctime: weekday, month, day, time, year (always GMT)
            (day, month, year, time, zone) = (fields[2], fields[1], number(fields[4]), fields[3], "GMT")
            guard fields[4].count == 4 else { return nil }
        default:
            return nil
        }
        let clock = time.split(separator: ":", omittingEmptySubsequences: false).map { $0.count == 2 ? number($0) : nil }
        guard zone == "GMT" || zone == "UTC", let year, (1...9999).contains(year),
              let dayNumber = number(day), (1...31).contains(dayNumber), day.count <= 2,
              let monthIndex = months.firstIndex(of: month.lowercased()),
              clock.count == 3, let hour = clock[0], let minute = clock[1], let second = clock[2],
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        // A leap second reads as the second before it.
        guard let seconds = UTCTime.seconds(year: year, month: monthIndex + 1, day: dayNumber,
                                            hour: hour, minute: minute, second: min(second, 59)) else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }

    /// RFC 9110: a two-digit year is the latest year with those digits that is not more than 50
    /// years ahead of `now`.
    private static func centuryOf(_ yy: Int, now: Date) -> Int {
        var parts = tm()
        var time = time_t(now.timeIntervalSince1970)
        gmtime_r(&time, &parts)
        let thisYear = Int(parts.tm_year) + 1900
        var year = thisYear - thisYear % 100 + yy
        if year > thisYear + 50 { year -= 100 }
        if year + 100 <= thisYear + 50 { year += 100 }
        return year
    }

    /// A decimal number of ASCII digits only (`Int("+6")` would take the sign).
    private static func number(_ text: some StringProtocol) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(text)
    }
}
