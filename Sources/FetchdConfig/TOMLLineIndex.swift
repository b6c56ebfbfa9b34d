/// Finds the line on which a key or table header stands in a TOML document.
///
/// TOMLKit parses values but does not expose where they came from, and a diagnostic that
/// names no line is little help. This index scans the text once, following table headers
/// (`[table]`, `[[array]]`) and key assignments, while skipping the inside of multi-line
/// strings and multi-line arrays so their contents are never mistaken for keys.
///
/// It reads UTF-8 bytes, not Characters: every byte it looks for is ASCII, which never occurs
/// inside a multi-byte character, and grapheme breaking cost more than the rest of loading a
/// configuration of ten thousand handlers. Bytes also split a CRLF file into its lines, where
/// Characters see `\r\n` as one character that is not a newline.
struct TOMLLineIndex {
    /// A table section: its dotted name and, for `[[array]]` sections, which element it is.
    struct Section: Hashable {
        var name: String
        var element: Int?
    }

    private typealias Bytes = ArraySlice<UInt8>

    private var keyLines: [Section: [String: Int]] = [:]
    private var headerLines: [Section: Int] = [:]
    /// The first table header whose name does not start with a key character, e.g. `[/x]`.
    /// toml++ 3 (inside TOMLKit) aborts the whole process on such a header (an assertion in
    /// its parse_key), so the loader refuses the file before handing it over.
    private(set) var malformedHeaderLine: Int?

    /// Indexes `text`.
    init(_ text: String) {
        let bytes = Array(text.utf8)
        var section = Section(name: "", element: nil)
        var arrayCounts: [String: Int] = [:]
        var openMultilineString: [UInt8]?  // the delimiter while inside """ or '''
        var bracketDepth = 0
        var lineStart = 0
        var lineNumber = 0
        while lineStart <= bytes.count {
            let lineEnd = bytes[lineStart...].firstIndex(of: ASCII.newline) ?? bytes.count
            defer { lineStart = lineEnd + 1 }
            lineNumber += 1
            var line = bytes[lineStart..<lineEnd]
            if let delimiter = openMultilineString {
                guard let end = Self.range(of: delimiter, in: line) else { continue }
                openMultilineString = nil
                line = line[end.upperBound...]
                bracketDepth += Self.bracketBalance(of: line)
                continue
            }
            if bracketDepth > 0 {
                bracketDepth += Self.bracketBalance(of: line)
                continue
            }
            let trimmed = line.drop(while: ASCII.isBlank)
            let isArrayHeader = trimmed.starts(with: ASCII.doubleOpen)
            if trimmed.first == ASCII.open, malformedHeaderLine == nil {
                // After the one or two opening brackets, a key must start: toml++ asserts on
                // anything else (`[/x]`, a lone `[`, `[[[x]]`) instead of reporting an error.
                let opening = trimmed.dropFirst(isArrayHeader ? 2 : 1)
                if !(opening.first(where: { !ASCII.isBlank($0) }).map(ASCII.startsKey) ?? false) {
                    malformedHeaderLine = lineNumber
                }
            }
            if isArrayHeader {
                let name = Self.headerName(trimmed.dropFirst(2), closing: ASCII.doubleClose)
                let element = arrayCounts[name, default: 0]
                arrayCounts[name] = element + 1
                section = Section(name: name, element: element)
                headerLines[section] = lineNumber
            } else if trimmed.first == ASCII.open {
                let name = Self.headerName(trimmed.dropFirst(), closing: [ASCII.close])
                let (owner, key) = Self.owner(of: name, arrayCounts: arrayCounts)
                record(key, in: owner, at: lineNumber)
                section = Section(name: name, element: nil)
                headerLines[section] = lineNumber
            } else if let equals = Self.assignmentSplit(trimmed) {
                let key = Self.normalisedKey(trimmed[..<equals])
                record(key, in: section, at: lineNumber)
                if let dot = key.firstIndex(of: ".") { record(String(key[..<dot]), in: section, at: lineNumber) }
                let value = trimmed[(equals + 1)...]
                for delimiter in ASCII.multilineDelimiters {
                    if let start = Self.range(of: delimiter, in: value),
                       Self.range(of: delimiter, in: value[start.upperBound...]) == nil {
                        openMultilineString = delimiter
                    }
                }
                if openMultilineString == nil { bracketDepth = max(0, Self.bracketBalance(of: value)) }
            }
        }
    }

    /// Records that `key` is first written at `lineNumber` in `section`, unless it already was.
    private mutating func record(_ key: String, in section: Section, at lineNumber: Int) {
        if keyLines[section, default: [:]][key] == nil { keyLines[section, default: [:]][key] = lineNumber }
    }

    /// The section and key a `[table]` header named `path` defines: inside the current element
    /// of an `[[array]]` when `path` starts with the array's name, otherwise at the top level.
    private static func owner(of path: String, arrayCounts: [String: Int]) -> (Section, String) {
        let parts = path.split(separator: ".").map(String.init)
        for length in stride(from: parts.count - 1, through: 1, by: -1) {
            let prefix = parts[..<length].joined(separator: ".")
            if let count = arrayCounts[prefix] { return (Section(name: prefix, element: count - 1), parts[length]) }
        }
        return (Section(name: "", element: nil), parts.first ?? path)
    }

    /// The line of `key` in `section`, or of its section header when the key is not written there.
    func line(of key: String, in section: Section) -> Int? {
        keyLines[section]?[key] ?? headerLine(of: section)
    }

    /// The line of the section's header; for tables written inline (`handler = [{ ... }]`),
    /// the line of the key that holds them.
    func headerLine(of section: Section) -> Int? {
        headerLines[section] ?? keyLines[Section(name: "", element: nil)]?[section.name]
    }

    private static func headerName(_ text: Bytes, closing: [UInt8]) -> String {
        normalisedKey(range(of: closing, in: text).map { text[..<$0.lowerBound] } ?? text)
    }

    /// Joins a possibly dotted, possibly quoted key into one canonical dotted string.
    private static func normalisedKey(_ text: Bytes) -> String {
        // Most keys are bare words: no split, trim or join (this runs for every key of every
        // file, 10,000 handlers included).
        let bare = text.drop(while: ASCII.isBlank)
        if let last = bare.lastIndex(where: { !ASCII.isBlank($0) }),
           !bare[...last].contains(where: { $0 == ASCII.dot || ASCII.isQuote($0) || ASCII.isBlank($0) }) {
            return String(decoding: bare[...last], as: UTF8.self)
        }
        return text.split(separator: ASCII.dot).map { part in
            var piece = part.drop(while: ASCII.isBlank)
            if let last = piece.lastIndex(where: { !ASCII.isBlank($0) }) { piece = piece[...last] } else { piece = [] }
            if piece.count >= 2, let first = piece.first, ASCII.isQuote(first), piece.last == first {
                piece = piece.dropFirst().dropLast()
            }
            return String(decoding: piece, as: UTF8.self)
        }.joined(separator: ".")
    }

    /// The index of the `=` of a `key = value` line, ignoring `=` inside a quoted key.
    private static func assignmentSplit(_ line: Bytes) -> Int? {
        guard let first = line.first, first != ASCII.hash else { return nil }
        var quote: UInt8?
        for index in line.indices {
            let byte = line[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if ASCII.isQuote(byte) {
                quote = byte
            } else if byte == ASCII.equals {
                return index
            } else if byte == ASCII.hash {
                return nil
            }
        }
        return nil
    }

    /// Net count of `[` minus `]` outside strings and comments, to follow multi-line arrays.
    private static func bracketBalance(of text: Bytes) -> Int {
        var balance = 0
        var quote: UInt8?
        var escaped = false
        for byte in text {
            if let open = quote {
                if escaped {
                    escaped = false
                } else if byte == ASCII.backslash && open == ASCII.doubleQuote {
                    escaped = true
                } else if byte == open {
                    quote = nil
                }
                continue
            }
            switch byte {
            case ASCII.doubleQuote, ASCII.singleQuote: quote = byte
            case ASCII.open, ASCII.openBrace: balance += 1
            case ASCII.close, ASCII.closeBrace: balance -= 1
            case ASCII.hash: return balance
            default: break
            }
        }
        return balance
    }

    /// Where `needle` first occurs in `text`.
    private static func range(of needle: [UInt8], in text: Bytes) -> Range<Int>? {
        guard !needle.isEmpty, text.count >= needle.count else { return nil }
        var start = text.startIndex
        while start <= text.endIndex - needle.count {
            if text[start..<(start + needle.count)].elementsEqual(needle) { return start..<(start + needle.count) }
            start += 1
        }
        return nil
    }
}

/// The bytes the index looks for, all ASCII.
private enum ASCII {
    static let newline = UInt8(ascii: "\n")
    static let open = UInt8(ascii: "[")
    static let close = UInt8(ascii: "]")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let doubleOpen: [UInt8] = [open, open]
    static let doubleClose: [UInt8] = [close, close]
    static let doubleQuote = UInt8(ascii: "\"")
    static let singleQuote = UInt8(ascii: "'")
    static let multilineDelimiters: [[UInt8]] = [[UInt8](repeating: doubleQuote, count: 3),
                                                  [UInt8](repeating: singleQuote, count: 3)]
    static let backslash = UInt8(ascii: "\\")
    static let equals = UInt8(ascii: "=")
    static let hash = UInt8(ascii: "#")
    static let dot = UInt8(ascii: ".")

    /// Space and tab; a carriage return too, so that a CRLF line's end trims like an LF one's.
    static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }

    static func isQuote(_ byte: UInt8) -> Bool { byte == doubleQuote || byte == singleQuote }

    /// Whether a table header's name may start with `byte`: a bare key's letter, digit, `_` or
    /// `-`, a quoted key's quote, or the `]` of an empty name (which toml++ reports itself).
    static func startsKey(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"),
             doubleQuote, singleQuote, close:
            return true
        default:
            return false
        }
    }
}
