import Foundation

/// Reads and writes usage traces: one ISO-8601 timestamp with its UTC offset per line
/// (`2026-03-02T09:02:48+08:00`), the moments of use. Blank lines and `#` comments are skipped.
public enum UsageTrace {
    /// A line that is not a timestamp with an offset.
    public struct ParseError: Error, CustomStringConvertible, Equatable {
        /// The file, or "-" for text given directly.
        public var file: String
        /// 1-based line number.
        public var line: Int
        /// The offending text.
        public var text: String
        /// `trace.txt:3: "09:00" is not an ISO-8601 time with a UTC offset (like 2026-03-02T09:02:48+08:00)`.
        public var description: String {
            "\(file):\(line): \"\(text.prefix(60))\" is not an ISO-8601 time with a UTC offset (like 2026-03-02T09:02:48+08:00)"
        }
    }

    /// Parses `text`; events come back sorted.
    public static func parse(_ text: String, file: String = "-") throws(ParseError) -> [UsageEvent] {
        var events: [UsageEvent] = []
        // isNewline, not "\n": Swift reads "\r\n" as one Character, and a CRLF file would be one line.
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let event = event(from: line) else { throw ParseError(file: file, line: index + 1, text: line) }
            events.append(event)
        }
        return events.sorted()
    }

    /// Reads and parses a file.
    public static func read(path: String) throws -> [UsageEvent] {
        try parse(try String(contentsOfFile: path, encoding: .utf8), file: path)
    }

    /// One timestamp: `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`.
    static func event(from text: String) -> UsageEvent? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: " "),
              bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
        }
        let offset: Int
        if index == bytes.count - 1, bytes[index] == UInt8(ascii: "Z") {
            offset = 0
        } else if index + 6 == bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-"),
                  bytes[index + 3] == UInt8(ascii: ":"), let hours = number(index + 1, 2), let minutes = number(index + 4, 2),
                  hours <= 18, minutes < 60 {
            offset = (bytes[index] == UInt8(ascii: "-") ? -1 : 1) * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard let days = daysFromCivil(year: year, month: month, day: day), day <= daysIn(month: month, year: year)
        else { return nil }
        let local = Double(days * 86_400 + hour * 3600 + minute * 60 + second) + fraction
        return UsageEvent(date: Date(timeIntervalSince1970: local - Double(offset)), utcOffsetSeconds: offset)
    }

    /// Formats an instant as `2026-03-02T09:02:48+08:00` at `offsetSeconds`.
    public static func format(_ date: Date, offsetSeconds: Int) -> String {
        let local = LocalTime(date, offsetSeconds: offsetSeconds)
        let (year, month, day) = civil(fromDays: local.dayNumber)
        let second = (Int(date.timeIntervalSince1970.rounded(.down)) + offsetSeconds) % 60
        let sign = offsetSeconds < 0 ? "-" : "+"
        let absolute = abs(offsetSeconds)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(local.minuteOfDay / 60)):\(two(local.minuteOfDay % 60)):"
            + "\(two((second + 60) % 60))\(sign)\(two(absolute / 3600)):\(two(absolute % 3600 / 60))"
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int? {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day number (inverse of `daysFromCivil`).
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
