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
