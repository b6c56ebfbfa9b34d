import FetchdCore
import TOMLKit

/// Reads typed values out of one TOML table and records a located diagnostic for every key
/// that is missing, of the wrong type, out of range, or unknown.
///
/// Every accessor returns nil on a problem (and records it), so a loader can read all keys,
/// report every mistake in one pass, and decide afterwards whether the table is usable.
struct TableReader {
    let table: TOMLTable
    let file: String
    let lines: TOMLLineIndex
    let section: TOMLLineIndex.Section
    /// Prefix for keys in messages, e.g. `handler.` inside `[[handler]]`.
    let keyPrefix: String
    var handlerName: String?
    private(set) var diagnostics: [ConfigDiagnostic] = []
    /// Sized for a handler's keys up front (some thirty are known, `HandlerKeys.known`): grown
    /// key by key it would be rehashed five times per handler, a tenth of loading many handlers.
    private var consumed = Set<String>(minimumCapacity: 48)
    /// How many of `consumed` the table has.
    private var consumedPresent = 0

    init(table: TOMLTable, file: String, lines: TOMLLineIndex, section: TOMLLineIndex.Section, keyPrefix: String = "") {
        self.table = table
        self.file = file
        self.lines = lines
        self.section = section
        self.keyPrefix = keyPrefix
    }

    /// Records a problem with `key` at the key's line.
    mutating func report(_ key: String?, _ message: String) {
        let line = key.map { lines.line(of: $0, in: section) } ?? lines.headerLine(of: section)
        diagnostics.append(ConfigDiagnostic(
            file: file, line: line, key: key.map { keyPrefix + $0 }, message: message, handler: handlerName))
    }

    private mutating func value(_ key: String, required: Bool) -> TOMLValueConvertible? {
        let firstAsked = consumed.insert(key).inserted
        guard let value = table[key] else {
            if required { report(nil, "required key \"\(keyPrefix + key)\" is missing") }
            return nil
        }
        if firstAsked { consumedPresent += 1 }
        return value
    }

    private mutating func wrongType(_ key: String, _ value: TOMLValueConvertible, expected: String) {
        report(key, "expected \(expected), found \(Self.describe(value.type))")
    }

    /// Whether the table holds `key` (of whatever type): for a key whose absence must keep what
    /// was read before, where its value may also be read as "none".
    func holds(_ key: String) -> Bool { table.contains(key: key) }

    /// A string value.
    mutating func string(_ key: String, required: Bool = false) -> String? {
        guard let value = value(key, required: required) else { return nil }
        guard let string = value.string else { wrongType(key, value, expected: "a string"); return nil }
        return string
    }

    /// A boolean value.
    mutating func bool(_ key: String) -> Bool? {
        guard let value = value(key, required: false) else { return nil }
        guard let bool = value.bool else { wrongType(key, value, expected: "true or false"); return nil }
        return bool
    }

    /// An integer within `range`.
    mutating func int(_ key: String, in range: ClosedRange<Int>) -> Int? {
        guard let value = value(key, required: false) else { return nil }
        guard let int = value.int else { wrongType(key, value, expected: "an integer"); return nil }
        guard range.contains(int) else {
            report(key, "\(int) is out of range; expected \(range.lowerBound) to \(range.upperBound)")
            return nil
        }
        return int
    }

    /// A duration string such as `"30s"`, in seconds, within `range`.
    mutating func durationSeconds(_ key: String, in range: ClosedRange<Double>) -> Double? {
        guard let value = value(key, required: false) else { return nil }
        guard let text = value.string else {
            wrongType(key, value, expected: "a duration string such as \"30s\" or \"15m\""); return nil
        }
        return checkedDuration(key, text, in: range)
    }

    /// Parses `text` as a duration for `key`, recording a diagnostic when it is malformed or out of range.
    mutating func checkedDuration(_ key: String, _ text: String, in range: ClosedRange<Double>) -> Double? {
        let seconds: Double
        do { seconds = try HumanDuration.parseSeconds(text) } catch {
            report(key, error.description); return nil
        }
        guard range.contains(seconds) else {
            report(key, "\"\(text)\" is out of range; expected \(HumanDuration.format(seconds: range.lowerBound)) to \(HumanDuration.format(seconds: range.upperBound))")
            return nil
        }
        return seconds
    }

    /// The path in `key`, a relative one taken from the folder of the file that names it (as
    /// `handlers_dir` is), so that the daemon and a check from any working directory read
    /// the same file.
    mutating func path(_ key: String) -> String? {
        guard let path = string(key) else { return nil }
        guard !path.hasPrefix("/") else { return path }
        let folder = PathName.directory(of: PathName.absolute(file))
        return (folder == "/" ? "" : folder) + "/" + path
    }

    /// A non-empty array of strings (or an empty one when `allowsEmpty`); `example` is one,
    /// shown when the value is of another type.
    mutating func stringArray(_ key: String, example: String, required: Bool = false, allowsEmpty: Bool = false) -> [String]? {
        guard let value = value(key, required: required) else { return nil }
        guard let array = value.array else {
            wrongType(key, value, expected: "an array of strings such as \(example)"); return nil
        }
        var strings: [String] = []
        for element in array {
            guard let string = element.string else {
                report(key, "every element must be a string, found \(Self.describe(element.type))"); return nil
            }
            strings.append(string)
        }
        guard !strings.isEmpty || allowsEmpty else { report(key, "the array is empty; expected at least one element"); return nil }
        return strings
    }

    /// A table whose values are all strings, e.g. `environment = { LANG = "C" }`.
    mutating func stringTable(_ key: String) -> [String: String]? {
        guard let value = value(key, required: false) else { return nil }
        guard let inner = value.table else {
            wrongType(key, value, expected: "a table of strings such as { LANG = \"C\" }"); return nil
        }
        var result: [String: String] = [:]
        for innerKey in inner.keys {
            guard let string = inner[innerKey]?.string else {
                report(key, "\"\(innerKey)\" must be a string"); return nil
            }
            result[innerKey] = string
        }
        return result
    }

    /// Records every key of the table that no accessor asked for: a typo must not pass silently.
    /// Counts settle it first, as most tables hold only keys that were read: the table is asked
    /// for the known keys nobody read (a lookup in TOMLKit each) only when it holds more keys
    /// than were read, and its keys are listed only when one is unknown (TOMLKit's `keys` leaks
    /// every key it returns, once per table and load).
    mutating func reportUnknownKeys(known: [String]) {
        let count = table.count
        guard count > consumedPresent else { return }
        let knownPresent = Set(known).filter { !consumed.contains($0) && table.contains(key: $0) }.count
        guard count > consumedPresent + knownPresent else { return }
        for key in table.keys.sorted() where !consumed.contains(key) && !known.contains(key) {
            let suggestion = known.first(where: { Self.isNearMiss($0, key) }).map { "; did you mean \"\($0)\"?" } ?? ""
            report(key, "unknown key\(suggestion)")
        }
    }

    /// True when two keys differ by at most two edits, to suggest the intended key.
    private static func isNearMiss(_ a: String, _ b: String) -> Bool {
        let a = Array(a), b = Array(b)
        guard abs(a.count - b.count) <= 2 else { return false }
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count] <= 2
    }

    /// A person's name for a TOML type, for messages.
    static func describe(_ type: TOMLType) -> String {
        switch type {
        case .table: "a table"
        case .array: "an array"
        case .string: "a string"
        case .int: "an integer"
        case .double: "a floating-point number"
        case .bool: "a boolean"
        case .date, .time, .dateTime: "a date/time"
        }
    }
}
