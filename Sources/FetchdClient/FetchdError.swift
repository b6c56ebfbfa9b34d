import FetchdSystemd

/// A call to fetchd that failed: the D-Bus error's name and its message for the developer.
/// fetchd's own refusals carry its names (`org.fetchd.Fetchd1.Error.NotFound`, fetchd-dbus(7)
/// lists them); what fails on this side (no bus, a lost connection, no answer in time, a reply
/// of an unexpected shape) carries the standard D-Bus name for it, so a caller tells failures
/// apart by one field whichever side failed.
public struct FetchdError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The D-Bus error names a caller may meet: fetchd's (fetchd-dbus(7)) and the bus's.
    public enum Name {
        /// A name or option is malformed, of the wrong type, unknown or not allowed.
        public static let invalidArguments = Fetchd1Names.error("InvalidArguments")
        /// No handler of that name is registered for the caller.
        public static let notFound = Fetchd1Names.error("NotFound")
        /// The handler belongs to another uid, or polkit did not allow the call.
        public static let notPermitted = Fetchd1Names.error("NotPermitted")
        /// A quota of the uid's (`dbus_max_*`) would be passed.
        public static let quotaExceeded = Fetchd1Names.error("QuotaExceeded")
        /// The handler has published no content yet.
        public static let noSnapshot = Fetchd1Names.error("NoSnapshot")
        /// fetchd could not store or read what it needed; nothing changed.
        public static let failed = Fetchd1Names.error("Failed")
        /// No fetchd on the bus, and none could be started (D-Bus activation).
        public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
        /// The bus could not be reached.
        public static let noServer = "org.freedesktop.DBus.Error.NoServer"
        /// The connection to the bus was lost or closed.
        public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
        /// No answer in time: a call, or `FetchdClient.fetch`'s wait for the result.
        public static let timeout = "org.freedesktop.DBus.Error.Timeout"
        /// A reply did not hold what fetchd-dbus(7) says it holds.
        public static let inconsistentMessage = "org.freedesktop.DBus.Error.InconsistentMessage"
        /// Anything else that failed on this side.
        public static let clientFailed = "org.freedesktop.DBus.Error.Failed"
    }

    /// The D-Bus error's name (see `Name`).
    public let name: String
    /// What went wrong, and often what to do.
    public let message: String

    /// An error.
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// `NAME: MESSAGE`.
    public var description: String { "\(name): \(message)" }

    /// A bus failure: the peer's error as it named it, else one of this side, named `otherwise`.
    init(_ error: BusError, otherwise: String) {
        if let name = error.name {
            self.init(name: name, message: error.reason)
        } else {
            self.init(name: otherwise, message: error.description)
        }
    }
}
