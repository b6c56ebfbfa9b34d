import CSystemdShim
import Foundation

/// A connection to a D-Bus bus (sd-bus), owned by this object and closed in `deinit`: signal
/// matches with Swift handlers, method calls, and processing of what has arrived.
///
/// sd-bus is not thread-safe: a connection must be used on one thread at a time. `BusListener`
/// is the way to run one (it confines it to a serial queue and processes it when its socket is
/// readable); on its own a connection is only the typed layer over the C handle.
public final class BusConnection {
    /// Which bus to connect to.
    public enum Bus: Sendable, Equatable, CustomStringConvertible {
        /// The system bus: `$DBUS_SYSTEM_BUS_ADDRESS`, else `/run/dbus/system_bus_socket`.
        case system
        /// The user's session bus.
        case user
        /// The bus at a D-Bus address, e.g. `unix:path=/run/some/bus`.
        case address(String)

        /// The user's session bus, by the name D-Bus gives it (`user` is systemd's).
        public static var session: Bus { .user }

        /// "system bus", "user bus" or "bus at ADDRESS".
        public var description: String {
            switch self {
            case .system: "system bus"
            case .user: "user bus"
            case .address(let address): "bus at \(address)"
            }
        }
    }

    /// A match's handler, kept alive as long as the connection (the match slots are the bus's).
    private final class MatchHandler {
        let handle: (BusMessage) -> Void
        init(_ handle: @escaping (BusMessage) -> Void) { self.handle = handle }
    }

    private let bus: OpaquePointer
    /// The sd-bus connection, for the server's C calls in this module.
    var handle: OpaquePointer { bus }
    private var handlers: [MatchHandler] = []

    /// Connects to `bus`. Every blocking call on the connection (installing a match, a method
    /// call) gives up after `callTimeoutSeconds`, so a bus that stops answering cannot hold its
    /// caller longer than that.
    public init(_ bus: Bus, callTimeoutSeconds: Double = 5) throws(BusError) {
        var handle: OpaquePointer?
        let timeoutMicroseconds = UInt64(callTimeoutSeconds * 1_000_000)
        let result = switch bus {
        case .system: fetchd_bus_open_with_timeout(0, timeoutMicroseconds, &handle)
        case .user: fetchd_bus_open_with_timeout(1, timeoutMicroseconds, &handle)
        case .address(let address): fetchd_bus_open_address(address, timeoutMicroseconds, &handle)
        }
        guard result >= 0, let handle else { throw BusError(operation: "connect to the \(bus)", errno: result) }
        self.bus = handle
    }

    // Not sd_bus_flush_close_unref: a flush waits without a time limit for a bus that has
    // stopped reading, and nothing left in the queue (automatic replies) is worth a hang.
    deinit { sd_bus_close_unref(bus) }

    /// The connection's socket: readable when messages have arrived (see `processPending`).
    public var fileDescriptor: Int32 { sd_bus_get_fd(bus) }

    /// Installs `rule` on the bus (synchronously) and calls `handler` for every matching message
    /// while the connection is processed.
    public func addMatch(_ rule: BusMatchRule, handler: @escaping (BusMessage) -> Void) throws(BusError) {
        let box = MatchHandler(handler)
        let result = fetchd_bus_add_match(bus, rule.description, { message, userdata, _ in
            guard let message, let userdata else { return 0 }
            Unmanaged<MatchHandler>.fromOpaque(userdata).takeUnretainedValue().handle(BusMessage(retaining: message))
            return 0
        }, Unmanaged.passUnretained(box).toOpaque())
        guard result >= 0 else { throw BusError(operation: "add the match \(rule)", errno: result) }
        handlers.append(box)
    }

    /// Calls `member` on `destination` with string arguments and returns the reply.
    public func call(destination: String, path: String, interface: String, member: String,
                     arguments: [String] = []) throws(BusError) -> BusMessage {
        try call(destination: destination, path: path, interface: interface, member: member,
                 arguments: arguments.map(BusArgument.string))
    }

    /// Calls `member` on `destination` with `arguments` and returns the reply. A D-Bus error the
    /// peer answers with is thrown with its name.
    public func call(destination: String, path: String, interface: String, member: String,
                     arguments: [BusArgument]) throws(BusError) -> BusMessage {
        let operation = "call \(interface).\(member) on \(destination)"
        var message: OpaquePointer?
        var result = sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
        guard result >= 0, let message else { throw BusError(operation: operation, errno: result) }
        defer { sd_bus_message_unref(message) }
        for argument in arguments where result >= 0 { result = argument.write(into: message) }
        guard result >= 0 else { throw BusError(operation: operation, errno: result) }
        var name = [CChar](repeating: 0, count: 256)
        // Room for a refusal that names every bad option of a registration, and why.
        var text = [CChar](repeating: 0, count: 8192)
        var reply: OpaquePointer?
        result = fetchd_bus_call(bus, message, &reply, &name, name.count, &text, text.count)
        guard result >= 0, let reply else {
            let errorName = Self.string(name)
            throw BusError(operation: operation, name: errorName.isEmpty ? nil : errorName, reason: Self.string(text))
        }
        return BusMessage(adopting: reply)
    }

    /// Runs the handlers of every message that has arrived, including those read while a
    /// blocking call waited for its reply (they do not make the socket readable again).
    /// Throws when the connection has closed (the bus went away).
    public func processPending() throws(BusError) {
        while true {
            let result = sd_bus_process(bus, nil)
            if result < 0 { throw BusError(operation: "read from the bus", errno: result) }
            if result == 0 { break }
        }
        // A closed connection reports it once; afterwards the state is what tells.
        if sd_bus_is_open(bus) <= 0 { throw BusError(operation: "read from the bus", reason: "the connection closed") }
    }

    /// Sends what is queued for writing.
    public func flush() throws(BusError) {
        let result = sd_bus_flush(bus)
        if result < 0 { throw BusError(operation: "write to the bus", errno: result) }
    }

    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
