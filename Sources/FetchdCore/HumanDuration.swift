/// Parses and formats the human duration strings used in config files:
/// `500ms`, `30s`, `15m`, `2h`, `1d`, and sums such as `1h30m`.
public enum HumanDuration {
    /// Why a duration string was rejected.
    public struct ParseError: Error, CustomStringConvertible, Equatable {
        /// The text that was rejected.
        public let text: String
        /// What is expected instead.
        public var description: String {
            "\"\(text)\" is not a duration; expected a number with a unit, e.g. \"500ms\", \"30s\", \"15m\", \"2h\", \"1d\" or \"1h30m\""
        }
    }

    private static let unitSeconds: [(suffix: String, seconds: Double)] = [
        ("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800),
    ]

    /// Parses `text` into seconds. Whitespace between parts is allowed; a bare number is rejected
    /// because its unit would be a guess.
    public static func parseSeconds(_ text: String) throws(ParseError) -> Double {
        // Bytes, not Characters: a config of thousands of handlers reads several durations each,
        // and Character's Unicode properties cost more than the rest of reading a key. Digits,
        // units and spaces are ASCII: any other byte ends a number or a unit, and is refused.
        var rest = text.utf8.trimmingWhitespace()
        guard !rest.isEmpty else { throw ParseError(text: text) }
        var total = 0.0
        while !rest.isEmpty {
            rest = rest.drop(while: { $0 == UInt8(ascii: " ") })
            let number = rest.prefix(while: { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ".") })
            guard !number.isEmpty, let value = Double(Substring(number)) else { throw ParseError(text: text) }
            rest = rest.dropFirst(number.count)
            let unitBytes = rest.prefix(while: { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) })
            let unit = String(Substring(unitBytes)).lowercased()
            guard let match = unitSeconds.first(where: { $0.suffix == unit }) else { throw ParseError(text: text) }
            rest = rest.dropFirst(unitBytes.count)
            total += value * match.seconds
        }
        return total
    }

    /// Formats seconds compactly: `45s`, `15m`, `2h5m`, `1d`, `250ms`.
    public static func format(seconds: Double) -> String {
        if seconds < 0 { return "-" + format(seconds: -seconds) }
        if seconds < 1 && seconds > 0 { return "\(Int((seconds * 1000).rounded()))ms" }
        if seconds < 60 && seconds != seconds.rounded() {
            return "\((seconds * 1000).rounded() / 1000)s"  // keep 1.5s from becoming 2s
        }
        var remaining = Int(seconds.rounded())
        if remaining == 0 { return "0s" }
        var parts: [String] = []
        for (suffix, size) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] where remaining >= size {
            parts.append("\(remaining / size)\(suffix)")
            remaining %= size
        }
        return parts.joined()
    }
}

extension String {
    /// The string without leading and trailing spaces, tabs, newlines and carriage returns.
    func trimmingWhitespace() -> String {
        String(Substring(utf8.trimmingWhitespace()))
    }
}

extension String.UTF8View {
    /// The bytes without leading and trailing spaces, tabs, newlines and carriage returns (byte
    /// by byte: a CRLF is two of them, where Characters see one that is neither).
    func trimmingWhitespace() -> Substring.UTF8View {
        let isSpace = { (byte: UInt8) in
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
        }
        var bytes = self[...].drop(while: isSpace)
        while let last = bytes.last, isSpace(last) { bytes = bytes.dropLast() }
        return bytes
    }
}
