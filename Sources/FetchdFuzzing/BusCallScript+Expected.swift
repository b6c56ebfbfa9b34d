import FetchdConfig
import FetchdDaemon

/// What fetchd-dbus(7) says a call must read as, worked out from the values the script
/// appended rather than from the message: the decoder's specification, written a second time.
extension BusCallScript {
    /// The request a call reads as, or the words one of which its refusal must start with.
    enum Expected {
        case request(BusRequest.Method)
        case refused([String])
    }

    /// The limits an `a{sv}` is held to (`BusOption.Limits`).
    static let maxOptions = 64, maxElements = 256, maxBytes = 16 * 1024

    /// What this call must read as.
    func expected() -> Expected {
        var rest = arguments[...]
        let unreadable = "the arguments of \(member) could not be read"
        var name = ""
        if member != "ListHandlers" {
            guard case .string("s", let text)? = rest.first else { return .refused([unreadable]) }
            name = text
            rest = rest.dropFirst()
        }
        var options: [(key: String, value: Option)] = []
        if ["RegisterHandler", "FetchNow", "OpenSnapshot"].contains(member) {
            guard case .dictionary("s", .variant, let entries)? = rest.first else { return .refused([unreadable]) }
            switch Self.options(entries) {
            case .success(let read): options = read
            case .failure(let refusal): return .refused(["\(unreadable): \(refusal.reason)"])
            }
        }
        switch member {
        case "RegisterHandler":
            var values: [String: Registration.Value] = [:]
            var problems: [String] = []
            for (key, option) in options {
                switch option {
                case .value(let value): values[key] = value
                case .unsigned(let value):
                    if let integer = Int64(exactly: value) { values[key] = .integer(integer) } else { problems.append("\(key): \(value) is too large") }
                case .unsupported(let signature): problems.append("\(key): a value of type \"\(signature)\" is not accepted")
                }
            }
            return problems.isEmpty ? .request(.register(name: name, options: values)) : .refused(problems)
        case "UnregisterHandler": return .request(.unregister(name: name))
        case "ListHandlers": return .request(.list)
        case "GetHandler": return .request(.get(name: name))
        case "GetHandlerObject": return .request(.getObject(name: name))
        case "ReportUse": return .request(.reportUse(name: name))
        case "FetchNow", "OpenSnapshot":
            if let key = options.map(\.key).sorted().first { return .refused(["\(member) takes no option \"\(key)\""]) }
            return .request(member == "FetchNow" ? .fetchNow(name: name) : .openSnapshot(name: name))
        default: return .refused(["fetchd has no method \"\(member)\""])
        }
    }

    /// One option as read: a handler file's value, a `t` (too large for one when above
    /// `Int64.max`), or a type no key takes.
    enum Option {
        case value(Registration.Value)
        case unsigned(UInt64)
        case unsupported(String)
    }

    struct Refusal: Error { let reason: String }

    /// An `a{sv}` read entry by entry, refused at the first entry past a limit or repeated.
    static func options(_ entries: [(Value, Value)]) -> Result<[(key: String, value: Option)], Refusal> {
        var read: [(key: String, value: Option)] = []
        var seen = Set<String>()
        for (keyValue, variant) in entries {
            guard read.count < maxOptions else { return .failure(Refusal(reason: "more than \(maxOptions) options")) }
            guard case .string(_, let key) = keyValue, case .variant(let inner) = variant else {
                preconditionFailure("an options dictionary that is not a{sv}")
            }
            guard key.utf8.count <= maxBytes else {
                return .failure(Refusal(reason: "an option name is longer than \(maxBytes) bytes"))
            }
            guard seen.insert(key).inserted else { return .failure(Refusal(reason: "the option \"\(key)\" is given twice")) }
            switch option(inner, key: key) {
            case .success(let option): read.append((key, option))
            case .failure(let refusal): return .failure(refusal)
            }
        }
        return .success(read)
    }

    private static func option(_ value: Value, key: String) -> Result<Option, Refusal> {
        func tooLong(_ text: String, _ what: String) -> Refusal? {
            text.utf8.count > maxBytes ? Refusal(reason: "\(what) is longer than \(maxBytes) bytes") : nil
        }
        switch value {
        case .array(.basic("s"), let elements):
            var strings: [String] = []
            for element in elements {
                guard strings.count < maxElements else { return .failure(Refusal(reason: "\"\(key)\" has more than \(maxElements) elements")) }
                guard case .string(_, let text) = element else { preconditionFailure("an as holds a non-string") }
                if let refusal = tooLong(text, "an element of \"\(key)\"") { return .failure(refusal) }
                strings.append(text)
            }
            return .success(.value(.strings(strings)))
        case .dictionary("s", .basic("s"), let entries):
            var map: [String: String] = [:]
            for entry in entries {
                guard map.count < maxElements else { return .failure(Refusal(reason: "\"\(key)\" has more than \(maxElements) entries")) }
                guard case (.string(_, let name), .string(_, let text)) = entry else { preconditionFailure("an a{ss} holds a non-string") }
                if let refusal = tooLong(name, "a name in \"\(key)\"") ?? tooLong(text, "a value in \"\(key)\"") { return .failure(refusal) }
                map[name] = text
            }
            return .success(.value(.table(map)))
        case .string(_, let text):
            if let refusal = tooLong(text, "the value of \"\(key)\"") { return .failure(refusal) }
            return .success(.value(.string(text)))
        case .bool(let bool): return .success(.value(.bool(bool)))
        case .double(let double): return .success(.value(.double(double)))
        case .integer("t", let bits): return .success(.unsigned(bits))
        case .integer(let code, let bits):
            let integer: Int64? = switch code {
            case "y": Int64(UInt8(truncatingIfNeeded: bits))
            case "n": Int64(Int16(truncatingIfNeeded: bits))
            case "q": Int64(UInt16(truncatingIfNeeded: bits))
            case "i": Int64(Int32(truncatingIfNeeded: bits))
            case "u": Int64(UInt32(truncatingIfNeeded: bits))
            case "x": Int64(bitPattern: bits)
            default: nil  // h: a descriptor
            }
            return .success(integer.map { .value(.integer($0)) } ?? .unsupported(String(code)))
        default: return .success(.unsupported(value.kind.signature))
        }
    }

    /// Whether two methods are the same, a double being the same as itself when NaN.
    static func same(_ one: BusRequest.Method, _ other: BusRequest.Method) -> Bool {
        if case .register(let name, let options) = one, case .register(let otherName, let otherOptions) = other {
            return name == otherName && same(options, otherOptions)
        }
        return one == other
    }

    /// Whether two sets of options are the same, a double being the same as itself when NaN.
    static func same(_ one: [String: Registration.Value], _ other: [String: Registration.Value]) -> Bool {
        one.count == other.count && one.allSatisfy { key, value in
            guard let otherValue = other[key] else { return false }
            if case .double(let a) = value, case .double(let b) = otherValue { return a.bitPattern == b.bitPattern }
            return value == otherValue
        }
    }
}
