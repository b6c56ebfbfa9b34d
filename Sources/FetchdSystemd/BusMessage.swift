import CSystemdShim

#if canImport(Glibc)
import Glibc
#endif

/// A D-Bus message (sd-bus), referenced by this object and released in `deinit`, read in order
/// with typed calls. Like its connection it is used on one thread at a time.
public final class BusMessage {
    /// A value read from a variant: the basic D-Bus types, widened; anything else is `other`.
    public enum Value: Sendable, Equatable {
        /// `b`.
        case bool(Bool)
        /// `y`, `n`, `q`, `i`, `u`, `x`.
        case integer(Int64)
        /// `t`.
        case unsigned(UInt64)
        /// `d`.
        case double(Double)
        /// `s`, `o` (an object path), `g` (a signature).
        case string(String)
        /// A container or a file descriptor, skipped; its signature.
        case other(signature: String)
    }

    private let message: OpaquePointer

    /// The sd-bus message, for the server's readers and writers in this module.
    var rawMessage: OpaquePointer { message }

    /// Takes a reference on `message` (one handed to a match callback, which sd-bus releases
    /// after the callback returns).
    init(retaining message: OpaquePointer) {
        self.message = message
        sd_bus_message_ref(message)
    }

    /// Adopts a reference the caller owns (a method call's reply).
    init(adopting message: OpaquePointer) { self.message = message }

    deinit { sd_bus_message_unref(message) }

    /// The sender's unique connection name (`:1.42`): the bus fills it in, no peer can forge it.
    public var sender: String? { sd_bus_message_get_sender(message).map { String(cString: $0) } }
    /// The object path it was sent from or to.
    public var path: String? { sd_bus_message_get_path(message).map { String(cString: $0) } }
    /// The interface of the signal or method.
    public var interface: String? { sd_bus_message_get_interface(message).map { String(cString: $0) } }
    /// The signal's or method's name.
    public var member: String? { sd_bus_message_get_member(message).map { String(cString: $0) } }
    /// Whether the caller lets the service ask its user to authenticate (polkit) before answering.
    public var allowsInteractiveAuthorization: Bool { sd_bus_message_get_allow_interactive_authorization(message) > 0 }

    /// Reads a `b`.
    public func readBool() throws(BusError) -> Bool {
        var value: Int32 = 0
        try check(fetchd_bus_message_read_bool(message, &value), "read a boolean")
        return value != 0
    }

    /// Reads an `s`.
    public func readString() throws(BusError) -> String { try readString(type: "s") }

    /// Reads an `o`.
    public func readObjectPath() throws(BusError) -> String { try readString(type: "o") }

    /// Reads an `s`, `o` or `g`.
    private func readString(type: Character) throws(BusError) -> String {
        var value: UnsafePointer<CChar>?
        try check(fetchd_bus_message_read_string(message, CChar(type), &value), "read a string (\(type))")
        return value.map { String(cString: $0) } ?? ""
    }

    /// Reads an `h` and returns a duplicate of the descriptor, close-on-exec, which the caller
    /// owns and must close: the message owns the one it carries and closes it with itself.
    public func readFileDescriptor() throws(BusError) -> Int32 {
        var fd: Int32 = -1
        try check(sd_bus_message_read_basic(message, CChar("h"), &fd), "read a file descriptor")
        let duplicate = fcntl(fd, F_DUPFD_CLOEXEC, 3)
        guard duplicate >= 0 else { throw BusError(operation: "keep a file descriptor", errno: -errno) }
        return duplicate
    }

    /// Reads an array of `{sv}` (a property map, as `PropertiesChanged` and `GetAll` carry it).
    public func readProperties() throws(BusError) -> [String: Value] {
        var properties: [String: Value] = [:]
        try enter("a", "{sv}")
        while try enterIfPresent("e", "sv") {
            let name = try readString()
            properties[name] = try readVariant()
            try exit()
        }
        try exit()
        return properties
    }

    /// Reads a `v`: its value when it holds a basic type, else skips it.
    public func readVariant() throws(BusError) -> Value {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        try check(fetchd_bus_message_peek(message, &type, &contents), "look at a variant")
        let signature = contents.map { String(cString: $0) } ?? ""
        // Anything else is skipped whole: one-character types included (`v`, `h`), which
        // entering and leaving unread would leave the message inside the variant (sd-bus
        // refuses to leave a variant before its end, EBUSY).
        guard signature.count == 1, let basic = signature.first, "bsogtdynqiux".contains(basic) else {
            try check(fetchd_bus_message_skip(message, "v"), "skip a variant")
            return .other(signature: signature)
        }
        try enter("v", signature)
        defer { _ = fetchd_bus_message_exit(message) }
        switch basic {
        case "b": return .bool(try readBool())
        case "s", "o", "g": return .string(try readString(type: basic))
        case "t":
            var value: UInt64 = 0
            try check(fetchd_bus_message_read_uint64(message, &value), "read a uint64")
            return .unsigned(value)
        case "d":
            var value = 0.0
            try check(fetchd_bus_message_read_double(message, &value), "read a double")
            return .double(value)
        default:  // y, n, q, i, u, x
            var value: Int64 = 0
            try check(fetchd_bus_message_read_int64(message, CChar(basic), &value), "read an integer (\(basic))")
            return .integer(value)
        }
    }

    /// Skips values of the given signature (e.g. `"as"`).
    public func skip(_ signature: String) throws(BusError) {
        try check(fetchd_bus_message_skip(message, signature), "skip \(signature)")
    }

    /// Enters a container (`a`, `v`, `r`, `e`) whose contents have `contents` as signature.
    public func enter(_ type: Character, _ contents: String) throws(BusError) {
        try check(fetchd_bus_message_enter(message, CChar(type), contents), "enter \(type)\(contents)")
    }

    /// Enters the next element of an array; false at its end.
    public func enterIfPresent(_ type: Character, _ contents: String) throws(BusError) -> Bool {
        let result = fetchd_bus_message_enter(message, CChar(type), contents)
        guard result >= 0 else { throw BusError(operation: "enter \(type)\(contents)", errno: result) }
        return result > 0
    }

    /// Leaves the container entered last.
    public func exit() throws(BusError) {
        let result = fetchd_bus_message_exit(message)
        guard result >= 0 else { throw BusError(operation: "leave a container", errno: result) }
    }

    /// A read must have read a value: 0 means the message (or container) ended early.
    private func check(_ result: Int32, _ operation: String) throws(BusError) {
        if result < 0 { throw BusError(operation: operation, errno: result) }
        if result == 0 { throw BusError(operation: operation, reason: "the message has no more values there") }
    }
}

private extension CChar {
    /// The ASCII code of a D-Bus type character.
    init(_ character: Character) { self = CChar(bitPattern: character.asciiValue ?? 0) }
}
