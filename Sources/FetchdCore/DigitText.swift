/// Text made of zero-padded decimal fields, written straight into bytes.
///
/// Timestamps in the state database and version names are made for every fetch; building
/// them from a dozen small `String`s (one per field and per padding) was a visible share of
/// recording a wake's results.
public struct DigitText {
    private var bytes: [UInt8] = []

    /// Starts an empty text with room for `capacity` bytes.
    public init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// Appends `value` in decimal, left-padded with zeros to at least `width` digits.
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

    /// Appends one ASCII character, e.g. a separator.
    public mutating func append(_ character: Unicode.Scalar) {
        bytes.append(UInt8(ascii: character))
    }

    /// The text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}
