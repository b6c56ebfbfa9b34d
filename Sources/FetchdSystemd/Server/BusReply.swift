import CSystemdShim

/// What a method of a `BusServer` answers with: one of the reply shapes fetchd's API uses, or a
/// named error.
public enum BusReply: Sendable {
    /// No values.
    case empty
    /// One `s`.
    case string(String)
    /// One `as`.
    case strings([String])
    /// One `o`.
    case objectPath(String)
    /// One `a{sv}`.
    case dictionary([BusEntry])
    /// An `h` and an `a{sv}`. The descriptor belongs to the reply: it is closed once sent (the
    /// bus carries a duplicate), and also when the call cannot be answered.
    case descriptor(Int32, [BusEntry])
    /// A D-Bus error.
    case error(BusReplyError)

    /// Whether it is a D-Bus error.
    public var isError: Bool { if case .error = self { true } else { false } }

    /// Closes the descriptor a reply holds, if any (for a reply never sent).
    func discard() { if case .descriptor(let fd, _) = self { _ = closeDescriptor(fd) } }
}

/// One entry of an `a{sv}` fetchd sends: in a reply, or in a method call of the client library.
public struct BusEntry: Sendable, Equatable {
    /// The value's D-Bus type.
    public enum Value: Sendable, Equatable {
        /// `s`.
        case string(String)
        /// `x`.
        case int64(Int64)
        /// `t`.
        case uint64(UInt64)
        /// `b`.
        case bool(Bool)
        /// `as`.
        case strings([String])
        /// `d`.
        case double(Double)
        /// `a{ss}`.
        case stringMap([String: String])
    }

    /// The key.
    public let key: String
    /// The value.
    public let value: Value

    /// An entry.
    public init(_ key: String, _ value: Value) {
        self.key = key
        self.value = value
    }
}

/// A named D-Bus error with a message for the developer who made the call.
public struct BusReplyError: Error, Sendable, Equatable {
    /// The error's name, `org.fetchd.Fetchd1.Error.NotFound` say.
    public let name: String
    /// What went wrong and what to do.
    public let message: String

    /// An error.
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }
}

extension BusReply {
    /// Writes the reply's values into `message` (a method return). Returns a negative errno on
    /// failure.
    func write(into message: OpaquePointer) -> Int32 {
        switch self {
        case .empty, .error: return 0
        case .string(let value): return fetchd_bus_append_string(message, value)
        case .strings(let values): return CStrings.with(values) { fetchd_bus_append_strings(message, $0, $1) }
        case .objectPath(let path): return fetchd_bus_append_object_path(message, path)
        case .dictionary(let entries): return Self.write(entries, into: message)
        case .descriptor(let fd, let entries):
            let result = fetchd_bus_append_fd(message, fd)
            return result < 0 ? result : Self.write(entries, into: message)
        }
    }

    /// Writes `entries` as an `a{sv}` into `message`. Returns a negative errno on failure.
    static func write(_ entries: [BusEntry], into message: OpaquePointer) -> Int32 {
        var result = fetchd_bus_open_options(message)
        for entry in entries where result >= 0 {
            result = switch entry.value {
            case .string(let value): fetchd_bus_append_option_string(message, entry.key, value)
            case .int64(let value): fetchd_bus_append_option_int64(message, entry.key, value)
            case .uint64(let value): fetchd_bus_append_option_uint64(message, entry.key, value)
            case .bool(let value): fetchd_bus_append_option_bool(message, entry.key, value ? 1 : 0)
            case .strings(let values):
                CStrings.with(values) { fetchd_bus_append_option_strings(message, entry.key, $0, $1) }
            case .double(let value): fetchd_bus_append_option_double(message, entry.key, value)
            case .stringMap(let map): write(map, key: entry.key, into: message)
            }
        }
        return result < 0 ? result : fetchd_bus_close_container(message)
    }

    /// Writes the entry `key` holding `map` as an `a{ss}`, sorted by name: the same map is
    /// always the same bytes on the bus.
    private static func write(_ map: [String: String], key: String, into message: OpaquePointer) -> Int32 {
        let pairs = map.sorted { $0.key < $1.key }
        return CStrings.with(pairs.map(\.key)) { names, count in
            CStrings.with(pairs.map(\.value)) { values, _ in
                fetchd_bus_append_option_string_map(message, key, names, values, count)
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
private func closeDescriptor(_ fd: Int32) -> Int32 { Glibc.close(fd) }
#endif
