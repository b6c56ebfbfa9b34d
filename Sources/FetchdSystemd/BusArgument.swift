import CSystemdShim

/// An argument of a method call `BusConnection.call` sends: the shapes the bus APIs fetchd
/// calls take (systemd's and logind's string arguments, fetchd's own `s` and `a{sv}`).
public enum BusArgument: Sendable, Equatable {
    /// An `s`.
    case string(String)
    /// An `a{sv}`.
    case dictionary([BusEntry])

    /// Appends the argument to `message`. Returns a negative errno on failure.
    func write(into message: OpaquePointer) -> Int32 {
        switch self {
        case .string(let value): fetchd_bus_append_string(message, value)
        case .dictionary(let entries): BusReply.write(entries, into: message)
        }
    }
}
