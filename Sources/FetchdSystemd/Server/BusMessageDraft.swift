import CSystemdShim

/// A method call of `org.fetchd.Fetchd1` built in memory and never sent, then read as the
/// daemon reads a call it received (`sealed()`): how the D-Bus fuzz target hands the decoders
/// every shape of message, since sd-bus has no public call that reads raw bytes into one.
/// sd-bus refuses what no peer could send (a wrong signature in a container, a string that is
/// not UTF-8), as it would on the wire.
public final class BusMessageDraft {
    private let message: OpaquePointer

    /// An empty call of `member`.
    public init(member: String) throws(BusError) {
        var message: OpaquePointer?
        let result = fetchd_bus_draft_new(member, &message)
        guard result >= 0, let message else { throw BusError(operation: "make a method call", errno: result) }
        self.message = message
    }

    deinit { sd_bus_message_unref(message) }

    /// Appends an `s`, `o` or `g`.
    public func append(string: String, type: Character = "s") throws(BusError) {
        try check(fetchd_bus_draft_append_string(message, Self.code(type), string), "append \(type)")
    }

    /// Appends a `b`.
    public func append(bool: Bool) throws(BusError) {
        var value: Int32 = bool ? 1 : 0
        try check(fetchd_bus_draft_append_fixed(message, Self.code("b"), &value), "append b")
    }

    /// Appends an integer of the D-Bus `type` (`y`, `n`, `q`, `i`, `u`, `x`, `t`), truncating
    /// `bits` to its width, or an `h` (a descriptor, duplicated into the message).
    public func append(integer bits: UInt64, type: Character) throws(BusError) {
        let code = Self.code(type)
        let result: Int32 = switch type {
        case "y": withUnsafeBytes(of: UInt8(truncatingIfNeeded: bits)) { fetchd_bus_draft_append_fixed(message, code, $0.baseAddress) }
        case "n": withUnsafeBytes(of: Int16(truncatingIfNeeded: bits)) { fetchd_bus_draft_append_fixed(message, code, $0.baseAddress) }
        case "q": withUnsafeBytes(of: UInt16(truncatingIfNeeded: bits)) { fetchd_bus_draft_append_fixed(message, code, $0.baseAddress) }
        case "i", "h": withUnsafeBytes(of: Int32(truncatingIfNeeded: bits)) { fetchd_bus_draft_append_fixed(message, code, $0.baseAddress) }
        case "u": withUnsafeBytes(of: UInt32(truncatingIfNeeded: bits)) { fetchd_bus_draft_append_fixed(message, code, $0.baseAddress) }
        case "x", "t": withUnsafeBytes(of: bits) { fetchd_bus_draft_append_fixed(message, code, $0.baseAddress) }
        default: -22  // EINVAL
        }
        try check(result, "append \(type)")
    }

    /// Appends a `d`.
    public func append(double: Double) throws(BusError) {
        var value = double
        try check(fetchd_bus_draft_append_fixed(message, Self.code("d"), &value), "append d")
    }

    /// Opens a container (`a`, `v`, `r`, `e`) whose contents have the signature `contents`.
    public func open(_ type: Character, _ contents: String) throws(BusError) {
        try check(fetchd_bus_draft_open(message, Self.code(type), contents), "open \(type)\(contents)")
    }

    /// Closes the container opened last.
    public func close() throws(BusError) {
        try check(fetchd_bus_draft_close(message), "close a container")
    }

    /// The call as a received one, read from its first value. The draft is done with.
    public func sealed() throws(BusError) -> BusMessage {
        try check(fetchd_bus_draft_seal(message), "seal the call")
        return BusMessage(retaining: message)
    }

    private func check(_ result: Int32, _ operation: String) throws(BusError) {
        if result < 0 { throw BusError(operation: operation, errno: result) }
    }

    private static func code(_ type: Character) -> CChar { CChar(bitPattern: type.asciiValue ?? 0) }
}
