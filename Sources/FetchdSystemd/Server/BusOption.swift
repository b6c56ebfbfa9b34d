/// One value of an `a{sv}` options dictionary a caller sent: the basic types, widened, and the
/// two containers handler options use (`as`, `a{ss}`). Anything else is kept as its signature,
/// for the error that names it.
public enum BusOption: Sendable, Equatable {
    /// `b`.
    case bool(Bool)
    /// `y`, `n`, `q`, `i`, `u`, `x`.
    case integer(Int64)
    /// `t`.
    case unsigned(UInt64)
    /// `d`.
    case double(Double)
    /// `s`, `o`, `g`.
    case string(String)
    /// `as`.
    case strings([String])
    /// `a{ss}`.
    case stringMap([String: String])
    /// Any other type, by its signature (`ai`, `(ss)`, `h`, `v`, ...).
    case unsupported(signature: String)

    /// What an `a{sv}` may hold before it is refused unread: a caller cannot make the daemon
    /// read (and keep) megabytes of options.
    public struct Limits: Sendable {
        /// Entries in the dictionary.
        public var entries = 64
        /// Elements of one array or map.
        public var elements = 256
        /// UTF-8 bytes of one key or string.
        public var stringBytes = 16 * 1024

        /// The limits fetchd's API applies.
        public init() {}
    }
}

extension BusEntry.Value {
    /// `option` as a value to send (a client sends what the server reads); nil for
    /// `unsupported`, which names a type but holds no value to write.
    public init?(_ option: BusOption) {
        switch option {
        case .bool(let value): self = .bool(value)
        case .integer(let value): self = .int64(value)
        case .unsigned(let value): self = .uint64(value)
        case .double(let value): self = .double(value)
        case .string(let value): self = .string(value)
        case .strings(let values): self = .strings(values)
        case .stringMap(let map): self = .stringMap(map)
        case .unsupported: return nil
        }
    }
}
