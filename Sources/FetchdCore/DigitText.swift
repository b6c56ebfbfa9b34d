#if canImport(Glibc)
import Glibc
#endif

/// Text made of zero-padded decimal fields, written straight into bytes.
///
/// Timestamps in the state database and version names are made for every fetch; building
/// them from a dozen small `String`s (one per field and per padding) was a visible share of
/// recording a wake's results.
public struct DigitText {
    private var bytes: [UInt8] = []

    /// Starts an empty text with room for `capacity` bytes.
    public init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// Appends `value` in decimal, left-padded with zeros to at least `width` digits (a
    /// negative value's sign comes before them and does not count in `width`).
    public mutating func append(_ value: Int, width: Int) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var count = 1
        var probe = value.magnitude
        while probe >= 10 { probe /= 10; count += 1 }
        if count < width { bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - count)) }
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
        var rest = value.magnitude
        for index in stride(from: start + count - 1, through: start, by: -1) {
            bytes[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
    }

    /// Appends a time in UTC, `2026-11-21<separator>08:30:12.345`, at the nearest millisecond.
    public mutating func appendUTC(secondsSince1970: Double, separator: Unicode.Scalar) {
        let milliseconds = Int64((secondsSince1970 * 1000).rounded())
        var (seconds, fraction) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        if fraction < 0 { seconds -= 1; fraction += 1000 }
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        append(Int(parts.tm_year) + 1900, width: 4)
        append("-")
        append(Int(parts.tm_mon) + 1, width: 2)
        append("-")
        append(Int(parts.tm_mday), width: 2)
        append(separator)
        append(Int(parts.tm_hour), width: 2)
        append(":")
        append(Int(parts.tm_min), width: 2)
        append(":")
        append(Int(parts.tm_sec), width: 2)
        append(".")
        append(Int(fraction), width: 3)
    }

    /// Appends ASCII text, e.g. a name.
    public mutating func appendASCII(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Appends one ASCII character, e.g. a separator.
    public mutating func append(_ character: Unicode.Scalar) {
        bytes.append(UInt8(ascii: character))
    }

    /// The text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}
