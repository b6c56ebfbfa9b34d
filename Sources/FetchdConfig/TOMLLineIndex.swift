/// Finds the line on which a key or table header stands in a TOML document.
///
/// TOMLKit parses values but does not expose where they came from, and a diagnostic that
/// names no line is little help. This index scans the text once, following table headers
/// (`[table]`, `[[array]]`) and key assignments, while skipping the inside of multi-line
/// strings and multi-line arrays so their contents are never mistaken for keys.
struct TOMLLineIndex {
    /// A table section: its dotted name and, for `[[array]]` sections, which element it is.
    struct Section: Hashable {
        var name: String
        var element: Int?
    }

    private var keyLines: [Section: [String: Int]] = [:]
    private var headerLines: [Section: Int] = [:]
    /// The first table header whose name does not start with a key character, e.g. `[/x]`.
    /// toml++ 3 (inside TOMLKit) aborts the whole process on such a header (an assertion in
    /// its parse_key), so the loader refuses the file before handing it over.
    private(set) var malformedHeaderLine: Int?

    /// Indexes `text`.
    init(_ text: String) {
        var section = Section(name: "", element: nil)
        var arrayCounts: [String: Int] = [:]
        var openMultilineString: String?  // the delimiter while inside """ or '''
        var bracketDepth = 0
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = offset + 1
            var line = Substring(rawLine)
            if let delimiter = openMultilineString {
                guard let end = line.range(of: delimiter) else { continue }
                openMultilineString = nil
                line = line[end.upperBound...]
                bracketDepth += Self.bracketBalance(of: line)
                continue
            }
            if bracketDepth > 0 {
                bracketDepth += Self.bracketBalance(of: line)
                continue
            }
            let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
            if trimmed.hasPrefix("["), malformedHeaderLine == nil {
                // After the one or two opening brackets, a key must start: toml++ asserts on
                // anything else (`[/x]`, a lone `[`, `[[[x]]`) instead of reporting an error.
                let opening = trimmed.hasPrefix("[[") ? trimmed.dropFirst(2) : trimmed.dropFirst()
                let first = opening.drop(while: { $0 == " " || $0 == "\t" }).first
                if !(first.map { ($0.isASCII && ($0.isLetter || $0.isNumber)) || "_-\"']".contains($0) } ?? false) {
                    malformedHeaderLine = lineNumber
                }
            }
            if trimmed.hasPrefix("[[") {
                let name = Self.headerName(trimmed.dropFirst(2), closing: "]]")
                let element = arrayCounts[name, default: 0]
                arrayCounts[name] = element + 1
                section = Section(name: name, element: element)
                headerLines[section] = lineNumber
            } else if trimmed.hasPrefix("[") {
                let name = Self.headerName(trimmed.dropFirst(), closing: "]")
                let (owner, key) = Self.owner(of: name, arrayCounts: arrayCounts)
                record(key, in: owner, at: lineNumber)
                section = Section(name: name, element: nil)
                headerLines[section] = lineNumber
            } else if let equals = Self.assignmentSplit(trimmed) {
                let key = Self.normalisedKey(trimmed[..<equals])
                record(key, in: section, at: lineNumber)
                if let dot = key.firstIndex(of: ".") { record(String(key[..<dot]), in: section, at: lineNumber) }
                let value = trimmed[trimmed.index(after: equals)...]
                for delimiter in ["\"\"\"", "'''"] {
                    if let start = value.range(of: delimiter),
                       value[start.upperBound...].range(of: delimiter) == nil {
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

    private static func headerName(_ text: Substring, closing: String) -> String {
        let inner = text.range(of: closing).map { text[..<$0.lowerBound] } ?? text
        return normalisedKey(inner)
    }

    /// Joins a possibly dotted, possibly quoted key into one canonical dotted string.
    private static func normalisedKey(_ text: Substring) -> String {
        // Most keys are bare words: no split, trim or join (this runs for every key of every
        // file, 10,000 handlers included).
        let bare = text.drop { $0 == " " || $0 == "\t" }
        if let last = bare.lastIndex(where: { $0 != " " && $0 != "\t" }),
           !bare[...last].contains(where: { $0 == "." || $0 == "\"" || $0 == "'" || $0 == " " || $0 == "\t" }) {
            return String(bare[...last])
        }
        return text.split(separator: ".").map { part in
            var piece = part.trimmingCharacters(in: " \t")
            if piece.count >= 2, let first = piece.first, first == "\"" || first == "'", piece.last == first {
                piece = String(piece.dropFirst().dropLast())
            }
            return piece
        }.joined(separator: ".")
    }

    /// The index of the `=` of a `key = value` line, ignoring `=` inside a quoted key.
    private static func assignmentSplit(_ line: Substring) -> Substring.Index? {
        guard let first = line.first, first != "#" else { return nil }
        var quote: Character?
        for index in line.indices {
            let character = line[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == "=" {
                return index
            } else if character == "#" {
                return nil
            }
        }
        return nil
    }

    /// Net count of `[` minus `]` outside strings and comments, to follow multi-line arrays.
    private static func bracketBalance(of text: Substring) -> Int {
        var balance = 0
        var quote: Character?
        var escaped = false
        for character in text {
            if let open = quote {
                if escaped { escaped = false } else if character == "\\" && open == "\"" { escaped = true } else if character == open { quote = nil }
                continue
            }
            switch character {
            case "\"", "'": quote = character
            case "[", "{": balance += 1
            case "]", "}": balance -= 1
            case "#": return balance
            default: break
            }
        }
        return balance
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let start = drop { set.contains($0) }
        guard let last = start.lastIndex(where: { !set.contains($0) }) else { return "" }
        return String(start[...last])
    }
}
