import FetchdCore

/// The bounds a configuration file's bytes are held to before the TOML parser sees them, in
/// one pass: UTF-8 throughout, no NUL byte, no line longer than `Defaults.configMaxLineBytes`,
/// no more than `Defaults.configMaxLineDots` dots outside strings on a line.
///
/// Why before the parser: toml++ (inside TOMLKit) reads a C string, so a NUL byte ends the
/// document there and whatever follows (handlers included) silently vanishes; and a dotted key
/// or table header of thousands of parts takes it time quadratic in their number, long enough
/// to hold up a running daemon. The size of the whole file is bounded by the reader
/// (`TrustedReader`), which reads no more than `Defaults.configMaxFileBytes`.
enum ConfigText {
    /// What is wrong with a file's text, and where.
    struct Problem: Error, Equatable {
        /// The line (from 1); nil for the file as a whole.
        let line: Int?
        /// What is wrong and what to do, starting with the column when there is one.
        let message: String
    }

    /// The first problem of `bytes`, nil when there is none.
    static func problem(in bytes: UnsafeRawBufferPointer) -> Problem? {
        var scan = Scan()
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0 { return scan.problem(at: index, in: bytes, "a NUL byte: the parser would stop there and lose the rest of the file; remove it") }
            if byte < 0x80 {
                if let problem = scan.take(byte, at: index, in: bytes) { return problem }
                index += 1
                continue
            }
            let length = Self.sequenceLength(bytes, at: index)
            guard length > 0 else {
                let hex = String(byte, radix: 16, uppercase: true)
                return scan.problem(at: index, in: bytes, "not UTF-8 text (byte 0x\(hex)); save the file as UTF-8")
            }
            index += length
        }
        return scan.lineEnded(at: bytes.count)
    }

    /// The length of the well-formed UTF-8 sequence at `index` (a byte of 0x80 or more), 0 when
    /// it is not one (the table of the Unicode standard, 3.9: no overlong forms, no surrogates,
    /// nothing past U+10FFFF).
    private static func sequenceLength(_ bytes: UnsafeRawBufferPointer, at index: Int) -> Int {
        let lead = bytes[index]
        let (length, second): (Int, ClosedRange<UInt8>)
        switch lead {
        case 0xC2...0xDF: (length, second) = (2, 0x80...0xBF)
        case 0xE0: (length, second) = (3, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (length, second) = (3, 0x80...0xBF)
        case 0xED: (length, second) = (3, 0x80...0x9F)
        case 0xF0: (length, second) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (length, second) = (4, 0x80...0xBF)
        case 0xF4: (length, second) = (4, 0x80...0x8F)
        default: return 0
        }
        guard index + length <= bytes.count, second.contains(bytes[index + 1]) else { return 0 }
        for offset in 2..<max(2, length) where !(0x80...0xBF).contains(bytes[index + offset]) { return 0 }
        return length
    }

    /// Where the pass is: the line, and whether it is inside a string or a comment.
    private struct Scan {
        var line = 1
        var lineStart = 0
        var dots = 0
        /// The quote of the string the pass is in (`"`, `'`), and whether it spans lines (`"""`).
        var inString: (quote: UInt8, multiline: Bool)?
        var inComment = false
        var escaped = false
        /// Quotes still to pass of a triple quote just taken.
        var quotesToSkip = 0

        /// Takes the ASCII byte at `index`.
        mutating func take(_ byte: UInt8, at index: Int, in bytes: UnsafeRawBufferPointer) -> Problem? {
            if byte == UInt8(ascii: "\n") {
                if let problem = lineEnded(at: index) { return problem }
                line += 1
                lineStart = index + 1
                dots = 0
                inComment = false
                escaped = false
                if let string = inString, !string.multiline { inString = nil }  // the parser reports it
                return nil
            }
            if inComment { return nil }
            if quotesToSkip > 0 {
                quotesToSkip -= 1
                return nil
            }
            if let string = inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\"), string.quote == UInt8(ascii: "\"") {
                    escaped = true
                } else if byte == string.quote, !string.multiline {
                    inString = nil
                } else if byte == string.quote, Self.triple(byte, at: index, in: bytes) {
                    inString = nil
                    quotesToSkip = 2
                }
                return nil
            }
            switch byte {
            case UInt8(ascii: "#"):
                inComment = true
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                let multiline = Self.triple(byte, at: index, in: bytes)
                inString = (byte, multiline)
                if multiline { quotesToSkip = 2 }
            case UInt8(ascii: "."):
                dots += 1
                if dots > Defaults.configMaxLineDots {
                    return problem(at: index, in: bytes, "more than \(Defaults.configMaxLineDots) dots outside strings on one line: "
                        + "a dotted key or table header of that many parts is refused (no fetchd key has more than three)")
                }
            default:
                break
            }
            return nil
        }

        /// Checks the length of the line ending at `index`.
        func lineEnded(at index: Int) -> Problem? {
            guard index - lineStart > Defaults.configMaxLineBytes else { return nil }
            return Problem(line: line, message: "the line is \(index - lineStart) bytes long, more than the "
                + "\(Defaults.configMaxLineBytes) a line may have; no fetchd value needs that much")
        }

        /// A problem at byte `index`, with its column counted in characters.
        func problem(at index: Int, in bytes: UnsafeRawBufferPointer, _ message: String) -> Problem {
            var column = 1
            for offset in lineStart..<index where bytes[offset] & 0xC0 != 0x80 { column += 1 }
            return Problem(line: line, message: "column \(column): \(message)")
        }

        /// Whether `quote` opens or closes a multi-line string at `index` (three in a row).
        static func triple(_ quote: UInt8, at index: Int, in bytes: UnsafeRawBufferPointer) -> Bool {
            index + 2 < bytes.count && bytes[index + 1] == quote && bytes[index + 2] == quote
        }
    }
}
