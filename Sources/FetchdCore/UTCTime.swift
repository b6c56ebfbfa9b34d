#if canImport(Glibc)
import Glibc
#endif

/// UTC calendar times as seconds since 1970, in the calendar `gmtime_r` writes them in
/// (proleptic Gregorian): what `HTTPDate`, a snapshot's `meta.json` times and the state
/// database's times are read with.
public enum UTCTime {
    /// The seconds since 1970 of `year-month-day hour:minute:second` UTC (month 1 to 12), or nil
    /// when the month has no such day: `timegm` carries 31 Nov into 1 Dec and says so by
    /// changing the fields.
    public static func seconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int? {
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (Int32(year - 1900), Int32(month - 1), Int32(day))
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (Int32(hour), Int32(minute), Int32(second))
        let seconds = timegm(&parts)
        guard parts.tm_mday == Int32(day), parts.tm_mon == Int32(month - 1) else { return nil }
        return Int(seconds)
    }

    /// Reads the shape `DigitText.appendUTC` writes, `2026-11-21 08:30:12.345` with `separator`
    /// between the day and the time (the fraction optional, at most nine digits), followed by
    /// `suffix` (e.g. `Z`) and nothing else. Nil for any other text, or a day the month lacks.
    /// No formatter: Foundation's read dates through ICU, whose code and tables then stay
    /// resident in the daemon.
    public static func secondsSince1970(reading text: String, separator: Unicode.Scalar,
                                        suffix: Unicode.Scalar? = nil) -> Double? {
        var bytes = Array(text.utf8)
        if let suffix {
            guard bytes.last == UInt8(ascii: suffix) else { return nil }
            bytes.removeLast()
        }
        guard (19...29).contains(bytes.count) else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        let separators: [(Int, Unicode.Scalar)] = [(4, "-"), (7, "-"), (10, separator), (13, ":"), (16, ":")]
        guard separators.allSatisfy({ bytes[$0.0] == UInt8(ascii: $0.1) }),
              let year = number(0..<4), (1...9999).contains(year), let month = number(5..<7), (1...12).contains(month),
              let day = number(8..<10), (1...31).contains(day), let hour = number(11..<13), (0...23).contains(hour),
              let minute = number(14..<16), (0...59).contains(minute), let second = number(17..<19), (0...59).contains(second)
        else { return nil }
        var fraction = 0.0
        if bytes.count > 19 {
            guard bytes[19] == UInt8(ascii: "."), bytes.count > 20, let digits = number(20..<bytes.count) else { return nil }
            fraction = Double(digits) / pow(10, Double(bytes.count - 20))
        }
        guard let seconds = seconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        else { return nil }
        return Double(seconds) + fraction
    }
}
