import Foundation

/// A D-Bus operation that failed: the bus is not there, the peer refused, or a message did not
/// hold what was expected.
public struct BusError: Error, CustomStringConvertible, Sendable {
    /// What was attempted, e.g. "connect to the system bus".
    public let operation: String
    /// The D-Bus error name the peer answered with (`org.freedesktop.DBus.Error.NameHasNoOwner`),
    /// when there is one.
    public let name: String?
    /// The peer's or the library's explanation.
    public let reason: String

    /// Creates an error.
    public init(operation: String, name: String? = nil, reason: String) {
        self.operation = operation
        self.name = name
        self.reason = reason
    }

    /// An error from a negative errno result of libsystemd.
    init(operation: String, errno result: Int32) {
        self.init(operation: operation, reason: String(cString: strerror(-result)))
    }

    /// `operation: reason`.
    public var description: String { "\(operation): \(reason)" }
}
