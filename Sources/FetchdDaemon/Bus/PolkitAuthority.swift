import FetchdSystemd
import Synchronization

/// polkit's say over fetchd's D-Bus API (fetchd-dbus(7), AUTHORIZATION): on the system bus
/// an unprivileged caller registers handlers and reaches another uid's only as polkit allows,
/// through the actions of `org.fetchd.Fetchd1.policy`. On a session bus polkit has no say: the
/// daemon is the user's own, and every caller there is that user.
final class PolkitAuthority: Sendable {
    /// The connection polkit is asked on, by what it serves.
    enum Connection: Sendable {
        /// No bus is served now.
        case none
        /// A session bus: polkit is not asked.
        case session
        /// The system bus, through this server's connection.
        case system(BusServer)
    }

    private let connection = Mutex(Connection.none)

    /// An authority with no connection yet.
    init() {}

    /// Follows the connection `BusService` serves.
    func use(_ new: Connection) { connection.withLock { $0 = new } }

    /// Whether polkit has a say (not on a session bus).
    var decides: Bool {
        if case .session = connection.withLock({ $0 }) { return false }
        return true
    }

    /// polkit's answer for `action` about `request`'s caller, or nil where polkit has no say.
    private func check(_ action: String, _ request: BusRequest) async -> BusServer.Authorization? {
        switch connection.withLock({ $0 }) {
        case .session: return nil
        case .none: return .noAnswer("fetchd is not connected to the system bus")
        case .system(let server):
            guard let sender = request.sender else { return .noAnswer("the call names no sender") }
            return await server.checkAuthorization(sender: sender, action: action, interactive: request.interactive)
        }
    }

    /// Returns when polkit allows `action` to `request`'s caller (or has no say); otherwise
    /// throws the named error to answer with, saying what `doing` needed.
    func require(_ action: String, _ request: BusRequest, doing: String) async throws(BusReplyError) {
        guard let answer = await check(action, request) else { return }
        switch answer {
        case .authorized:
            return
        case .challenge:
            throw BusReplyError(name: "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
                                message: "\(doing) needs you to authenticate (polkit action \(action)); call again allowing interactive authorization")
        case .notAuthorized:
            throw BusAPI.Failure.notPermitted(
                "polkit does not allow you to \(doing) (action \(action)); by default only users of an active local session may register their own handlers, and only administrators reach other users'")
        case .noAnswer(let reason):
            throw BusAPI.Failure.notPermitted("fetchd could not ask polkit whether you may \(doing) (\(reason)); is polkitd running?")
        }
    }
}
