import CSystemdShim

extension BusMessage {
    /// Reads an `a{sv}` a caller sent, refusing it (with a message a developer understands) when
    /// it is larger than `limits` or repeats a key.
    public func readOptions(limits: BusOption.Limits = .init()) throws(BusError) -> [String: BusOption] {
        var options: [String: BusOption] = [:]
        try enter("a", "{sv}")
        while try enterIfPresent("e", "sv") {
            guard options.count < limits.entries else {
                throw BusError(operation: "read the options", reason: "more than \(limits.entries) options")
            }
            let key = try readString()
            try Self.checkSize(key, limits, what: "an option name")
            guard options[key] == nil else {
                throw BusError(operation: "read the options", reason: "the option \"\(key)\" is given twice")
            }
            options[key] = try readOption(limits: limits, key: key)
            try exit()
        }
        try exit()
        return options
    }

    /// Reads one `v` of an options dictionary.
    private func readOption(limits: BusOption.Limits, key: String) throws(BusError) -> BusOption {
        let signature = try peekContents()
        switch signature {
        case "as":
            try enter("v", "as")
            defer { _ = try? exit() }
            return .strings(try readStrings(limits: limits, what: "\"\(key)\""))
        case "a{ss}":
            try enter("v", "a{ss}")
            defer { _ = try? exit() }
            var map: [String: String] = [:]
            try enter("a", "{ss}")
            while try enterIfPresent("e", "ss") {
                guard map.count < limits.elements else {
                    throw BusError(operation: "read the option \"\(key)\"", reason: "\"\(key)\" has more than \(limits.elements) entries")
                }
                let name = try readString(), value = try readString()
                try Self.checkSize(name, limits, what: "a name in \"\(key)\"")
                try Self.checkSize(value, limits, what: "a value in \"\(key)\"")
                map[name] = value
                try exit()
            }
            try exit()
            return .stringMap(map)
        default:
            switch try readVariant() {
            case .bool(let value): return .bool(value)
            case .integer(let value): return .integer(value)
            case .unsigned(let value): return .unsigned(value)
            case .double(let value): return .double(value)
            case .string(let value):
                try Self.checkSize(value, limits, what: "the value of \"\(key)\"")
                return .string(value)
            case .other(let signature): return .unsupported(signature: signature)
            }
        }
    }

    /// Reads an `as` (`what` names it in errors: "\"usage\"", an option's key), refusing it when it
    /// is larger than `limits`.
    public func readStrings(limits: BusOption.Limits = .init(), what: String = "an array of strings") throws(BusError) -> [String] {
        var strings: [String] = []
        try enter("a", "s")
        while true {
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            let result = fetchd_bus_message_peek(rawMessage, &type, &contents)
            guard result > 0 else {
                if result < 0 { throw BusError(operation: "read \(what)", errno: result) }
                break
            }
            guard strings.count < limits.elements else {
                throw BusError(operation: "read \(what)", reason: "\(what) has more than \(limits.elements) elements")
            }
            let string = try readString()
            try Self.checkSize(string, limits, what: "an element of \(what)")
            strings.append(string)
        }
        try exit()
        return strings
    }

    /// The signature of the next variant's contents.
    private func peekContents() throws(BusError) -> String {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let result = fetchd_bus_message_peek(rawMessage, &type, &contents)
        guard result > 0 else {
            throw result < 0 ? BusError(operation: "look at a variant", errno: result)
                             : BusError(operation: "look at a variant", reason: "the message has no more values there")
        }
        return contents.map { String(cString: $0) } ?? ""
    }

    private static func checkSize(_ string: String, _ limits: BusOption.Limits, what: String) throws(BusError) {
        guard string.utf8.count <= limits.stringBytes else {
            throw BusError(operation: "read the options", reason: "\(what) is longer than \(limits.stringBytes) bytes")
        }
    }
}
