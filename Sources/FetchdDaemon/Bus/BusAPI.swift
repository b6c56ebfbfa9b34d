import FetchdCore
import FetchdSystemd

/// What the daemon's side of its D-Bus API names (`Fetchd1Names`, shared with the client
/// library): the bus name, interface and object, polkit's actions, and the errors it answers.
enum BusAPI {
    /// The well-known bus name.
    static let name = Fetchd1Names.busName
    /// The main object's interface.
    static let interface = Fetchd1Names.interface
    /// The main object.
    static let path = Fetchd1Names.path

    /// The polkit actions (`org.fetchd.Fetchd1.policy`) asked on the system bus.
    enum Action {
        /// Registering handlers of one's own uid.
        static let registerOwn = "org.fetchd.Fetchd1.register-own"
        /// Reaching every uid's handlers.
        static let manageAll = "org.fetchd.Fetchd1.manage-all"
    }

    /// The named errors a method may answer with, each with a message for the developer.
    enum Failure {
        /// A name or option is malformed, unknown or not allowed.
        static func invalidArguments(_ message: String) -> BusReplyError {
            named("InvalidArguments", message)
        }
        /// No handler of that name is registered for the caller.
        static func notFound(_ name: String) -> BusReplyError {
            named("NotFound", "no handler \(quoted(name)) is registered for you; RegisterHandler it first (ListHandlers shows yours)")
        }
        /// The caller may not do this.
        static func notPermitted(_ message: String) -> BusReplyError {
            named("NotPermitted", message)
        }
        /// A per-uid quota is reached.
        static func quotaExceeded(_ message: String) -> BusReplyError {
            named("QuotaExceeded", message)
        }
        /// The handler has no snapshot yet.
        static func noSnapshot(_ name: String) -> BusReplyError {
            named("NoSnapshot", "\(quoted(name)) has no snapshot yet; call FetchNow and wait for FetchCompleted with newData")
        }
        /// Something on fetchd's side failed (the state database, the cache).
        static func failed(_ message: String) -> BusReplyError {
            named("Failed", message)
        }

        /// A name a caller sent, in quotes, as a message shows it: a name too long to be one
        /// (a megabyte, say) is cut, so a refusal is never larger than what was refused.
        static func quoted(_ name: String) -> String {
            let shown = HandlerName.maxLength + 16
            guard name.count > shown else { return "\"\(name)\"" }
            return "\"\(name.prefix(shown))...\" (\(name.utf8.count) bytes)"
        }

        /// The error `org.fetchd.Fetchd1.Error.SUFFIX`.
        private static func named(_ suffix: String, _ message: String) -> BusReplyError {
            BusReplyError(name: Fetchd1Names.error(suffix), message: message)
        }
    }
}
