import FetchdSystemd

/// A method call of fetchd's D-Bus API made from fuzz bytes, structure first: the bytes choose
/// a method, then either the method's own arguments (a name and an `a{sv}` of handler keys
/// whose variants hold any type) or any values at all; then types, sizes (past every limit of
/// `BusOption.Limits`) and contents. Bytes that run out read as zeros, so every input is a call.
struct BusCallScript {
    /// One D-Bus type.
    indirect enum Kind: Equatable {
        case basic(Character)
        case variant
        case array(Kind)
        case dictionary(key: Character, value: Kind)
        case structure([Kind])

        var signature: String {
            switch self {
            case .basic(let code): String(code)
            case .variant: "v"
            case .array(let element): "a" + element.signature
            case .dictionary(let key, let value): "a{\(key)\(value.signature)}"
            case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
            }
        }
    }

    /// One value, with its type.
    indirect enum Value {
        /// `s`, `o`, `g`.
        case string(Character, String)
        case bool(Bool)
        /// `y`, `n`, `q`, `i`, `u`, `x`, `t` as their bits; `h` as a descriptor.
        case integer(Character, UInt64)
        case double(Double)
        case variant(Value)
        case array(Kind, [Value])
        case dictionary(key: Character, value: Kind, [(Value, Value)])
        case structure([Value])

        var kind: Kind {
            switch self {
            case .string(let code, _), .integer(let code, _): .basic(code)
            case .bool: .basic("b")
            case .double: .basic("d")
            case .variant: .variant
            case .array(let element, _): .array(element)
            case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
            case .structure(let fields): .structure(fields.map(\.kind))
            }
        }
    }

    static let members = ["RegisterHandler", "UnregisterHandler", "ListHandlers", "GetHandler", "ReportUse", "FetchNow",
                          "OpenSnapshot", "Frobnicate", "registerHandler", "GetHandlerObject"]

    /// The method called.
    let member: String
    /// The arguments, in order.
    let arguments: [Value]
    /// The caller's uid: root or an ordinary user.
    let uid: UInt32

    init(_ bytes: [UInt8]) {
        var input = Input(bytes)
        let choice = input.byte()
        member = Self.members[Int(choice) % Self.members.count]
        uid = choice & 0x80 == 0 ? 0 : 1000
        let shape = input.byte()
        var arguments: [Value] = []
        if shape < 200 {
            // The method's own shape, with anything inside the options' variants.
            if member != "ListHandlers" { arguments.append(.string("s", input.name())) }
            if ["RegisterHandler", "FetchNow", "OpenSnapshot"].contains(member) { arguments.append(input.options()) }
            if shape % 16 == 0 { arguments.append(input.value(of: input.kind(depth: 0))) }
        } else {
            for _ in 0..<(shape % 4) { arguments.append(input.value(of: input.kind(depth: 0))) }
        }
        self.arguments = arguments
    }

    /// The call, built and sealed; nil when sd-bus refuses to build it (as it would refuse to
    /// read it off the wire).
    func message() -> BusMessage? {
        do throws(BusError) {
            let draft = try BusMessageDraft(member: member)
            for argument in arguments { try Self.append(argument, to: draft) }
            return try draft.sealed()
        } catch {
            return nil
        }
    }

    private static func append(_ value: Value, to draft: BusMessageDraft) throws(BusError) {
        switch value {
        case .string(let code, let text): try draft.append(string: text, type: code)
        case .bool(let bool): try draft.append(bool: bool)
        case .integer("h", _): try draft.append(integer: 0, type: "h")  // stdin, duplicated
        case .integer(let code, let bits): try draft.append(integer: bits, type: code)
        case .double(let double): try draft.append(double: double)
        case .variant(let inner):
            try draft.open("v", inner.kind.signature)
            try append(inner, to: draft)
            try draft.close()
        case .array(let element, let values):
            try draft.open("a", element.signature)
            for value in values { try append(value, to: draft) }
            try draft.close()
        case .dictionary(let key, let kind, let entries):
            try draft.open("a", "{\(key)\(kind.signature)}")
            for (name, value) in entries {
                try draft.open("e", "\(key)\(kind.signature)")
                try append(name, to: draft)
                try append(value, to: draft)
                try draft.close()
            }
            try draft.close()
        case .structure(let fields):
            try draft.open("r", fields.map(\.kind.signature).joined())
            for field in fields { try append(field, to: draft) }
            try draft.close()
        }
    }
}

extension BusCallScript {
    /// The fuzz bytes, read in order; zeros once they run out.
    struct Input {
        private let bytes: [UInt8]
        private var index = 0
        /// What the values may still weigh, in bytes of strings and 16 per other value: a long
        /// array of long arrays of long strings must not build gigabytes (the limits are far
        /// below this).
        private var budget = 1 << 18

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func byte() -> UInt8 {
            guard index < bytes.count else { return 0 }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func bits(_ count: Int) -> UInt64 {
            (0..<count).reduce(UInt64(0)) { bits, _ in bits << 8 | UInt64(byte()) }
        }

        /// Handler keys, misspelt ones, refused ones, and a name-like oddity.
        static let keys = [
            "kind", "url", "min_interval", "deadline", "retain", "max_bytes", "enabled", "honor_server_hints", "headers",
            "user_agent", "accept_encoding", "usage", "budget", "max_staleness", "lead", "push_limit", "network", "power",
            "battery_min", "sha256", "max_bytes_per_second", "stall_timeout", "allow_file_urls", "proxy", "ca_file", "user",
            "command", "on_complete", "environment", "push_token_file", "name", "bogus", "URL", "", "url ", "ünïcode",
        ]
        /// Values each key could take, and ones it could not.
        static let texts = [
            "http", "transfer", "exec", "https://example.com/news.json", "http://127.0.0.1/x", "http://[::1]/",
            "file:///etc/os-release", "http://10.0.0.1/", "ftp://example.com/", "5m", "1h", "30s", "5x", "-1s", "reads",
            "explicit", "12/day", "0/day", "unmetered", "any", "ac", "true", "gzip", "", " ", "\u{7f}", "a\u{ff}b",
            "news@0", "../../etc/passwd",
        ]
        /// Sizes around the limits (16 KiB strings, 256 elements, 64 options).
        static let longLengths = [16 * 1024, 16 * 1024 + 1, 16 * 1024 - 1, 40_000]
        static let longCounts = [63, 64, 65, 255, 256, 257, 1_000]

        /// A string: from the tables, from the bytes, or long.
        mutating func text(_ table: [String]) -> String {
            let choice = byte()
            switch choice {
            case 0..<100: return table[Int(choice) % table.count]
            case 100..<240:
                let length = Int(byte() % 24)
                // Bytes as Latin-1 scalars (multi-byte UTF-8 above 0x7f); D-Bus strings hold no NUL.
                return String(String.UnicodeScalarView((0..<length).map { _ in
                    Unicode.Scalar(max(byte(), 1))
                }))
            default:
                let length = Self.longLengths[Int(choice) % Self.longLengths.count]
                guard budget >= length else { return "" }
                budget -= length
                return String(repeating: "x", count: length)
            }
        }

        /// A handler name: ordinary, odd, qualified, long, or from the bytes.
        mutating func name() -> String {
            text(["news", "a", "", "../x", "news@0", "news@1000", "n\u{e9}ws", "-x", String(repeating: "n", count: 300)])
        }

        /// How many elements: few, or around a limit.
        mutating func count() -> Int {
            let choice = byte()
            return choice < 232 ? Int(choice % 6) : Self.longCounts[Int(choice) % Self.longCounts.count]
        }

        /// A type, nested at most four deep.
        mutating func kind(depth: Int) -> Kind {
            let choice = byte()
            let basics: [Character] = ["s", "o", "g", "b", "y", "n", "q", "i", "u", "x", "t", "d", "h"]
            guard depth < 4, choice >= 128 else { return .basic(basics[Int(choice) % basics.count]) }
            switch choice % 6 {
            case 0: return .variant
            case 1: return .array(kind(depth: depth + 1))
            case 2: return .dictionary(key: byte() % 2 == 0 ? "s" : basics[Int(byte()) % (basics.count - 1)],
                                       value: kind(depth: depth + 1))
            case 3: return .structure((0..<(1 + Int(byte() % 3))).map { _ in kind(depth: depth + 1) })
            case 4: return .array(.basic("s"))
            default: return .dictionary(key: "s", value: byte() % 2 == 0 ? .basic("s") : .variant)
            }
        }

        /// A value of `kind`. A long array or dictionary repeats its first element (with keys
        /// made distinct), so a few bytes reach past the limits.
        mutating func value(of kind: Kind, depth: Int = 0) -> Value {
            budget -= 16
            switch kind {
            case .basic(let code): return basic(code)
            case .variant: return .variant(value(of: self.kind(depth: depth + 1), depth: depth + 1))
            case .array(let element):
                let count = count()
                guard count > 0 else { return .array(element, []) }
                let before = budget
                let first = value(of: element, depth: depth + 1)
                let rest = count > 6 ? Array(repeating: first, count: repeats(count - 1, costing: before - budget))
                                     : (1..<count).map { _ in value(of: element, depth: depth + 1) }
                return .array(element, [first] + rest)
            case .dictionary(let key, let valueKind):
                let count = count()
                var entries: [(Value, Value)] = []
                var cost = 0
                for index in 0..<count {
                    if count > 6, index > 0, case .string("s", let name) = entries[0].0 {
                        guard repeats(1, costing: cost) == 1 else { break }
                        entries.append((.string("s", name + "\(index)"), entries[0].1))
                    } else {
                        let before = budget
                        entries.append((key == "s" ? .string("s", text(Self.keys)) : basic(key), value(of: valueKind, depth: depth + 1)))
                        cost = before - budget
                    }
                }
                return .dictionary(key: key, value: valueKind, entries)
            case .structure(let fields):
                return .structure(fields.map { value(of: $0, depth: depth + 1) })
            }
        }

        /// The options of RegisterHandler, FetchNow and OpenSnapshot: handler keys, each with a
        /// variant that holds a value of any type (mostly the types the keys take).
        mutating func options() -> Value {
            let count = count()
            var entries: [(Value, Value)] = []
            var cost = 0
            for index in 0..<count {
                if count > 6, index > 0, case .string(_, let key) = entries[0].0 {
                    guard repeats(1, costing: cost) == 1 else { break }
                    entries.append((.string("s", key + "\(index)"), entries[0].1))
                    continue
                }
                let before = budget
                defer { if index == 0 { cost = before - budget } }
                let choice = byte()
                let kind: Kind = switch choice % 8 {
                case 0, 1: .basic("s")
                case 2: .basic("x")
                case 3: .basic("b")
                case 4: .array(.basic("s"))
                case 5: .dictionary(key: "s", value: .basic("s"))
                default: self.kind(depth: 1)
                }
                entries.append((.string("s", text(Self.keys)), .variant(value(of: kind, depth: 1))))
            }
            return .dictionary(key: "s", value: .variant, entries)
        }

        /// How many of `count` copies of a value that cost `cost` the budget still allows
        /// (taken from it).
        private mutating func repeats(_ count: Int, costing cost: Int) -> Int {
            let allowed = max(0, min(count, budget / max(cost, 1)))
            budget -= allowed * max(cost, 1)
            return allowed
        }

        private mutating func basic(_ code: Character) -> Value {
            switch code {
            case "s": return .string("s", text(Self.texts))
            case "o": return .string("o", ["/", "/a", "/org/fetchd/Fetchd1", "/a/b_c/D1"][Int(byte()) % 4])
            case "g": return .string("g", ["", "s", "a{sv}", "v", "(ii)", "aas"][Int(byte()) % 6])
            case "b": return .bool(byte() % 2 == 1)
            case "d":
                let choice = byte()
                return .double(choice < 8 ? [.nan, .infinity, -.infinity, 0, -0.0, 1e300, 5e-324, 9.2e18][Int(choice)]
                                          : Double(bitPattern: bits(8)))
            case "y": return .integer(code, bits(1))
            case "n", "q": return .integer(code, bits(2))
            case "i", "u", "h": return .integer(code, bits(4))
            default:
                let choice = byte()
                return .integer(code, choice < 6 ? [0, 1, UInt64(Int64.max), UInt64(Int64.max) + 1, .max, 1 << 32][Int(choice)]
                                                 : bits(8))
            }
        }
    }
}
