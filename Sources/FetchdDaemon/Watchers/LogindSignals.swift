import FetchdSystemd
import Synchronization

/// logind's signals that say someone has just started using the machine, on a system bus
/// connection: a session unlocked (`Unlock`, or its `LockedHint` turning false), a session
/// becoming the active one (`Active` turning true), the machine resuming (`PrepareForSleep`
/// with false).
///
/// Only logind may say so. The bus routes the matches by `sender='org.freedesktop.login1'`, so
/// no other client's broadcast reaches fetchd; but any client may address a signal to fetchd's
/// connection directly, and sd-bus cannot tell a well-known sender apart on the client side. So
/// the owner of the name is tracked (asked once, then followed through the bus's
/// `NameOwnerChanged`, which only the bus itself sends) and every signal's sender, which the
/// bus fills in, must be that owner.
final class LogindSignals: BusSignals {
    /// What was seen.
    enum Event: Sendable, Equatable {
        /// A use of the machine, and what showed it ("unlock", "resume", ...).
        case use(String)
        /// logind is on the bus (true) or not (false).
        case present(Bool)
    }

    /// logind's well-known name on the system bus.
    static let busName = "org.freedesktop.login1"
    /// The manager object (`PrepareForSleep`).
    static let managerPath = "/org/freedesktop/login1"
    /// Where the session objects live (`/org/freedesktop/login1/session/<id>`).
    static let sessionPaths = "/org/freedesktop/login1/session"
    /// The session objects' interface (`Unlock`, `Active`, `LockedHint`).
    static let sessionInterface = "org.freedesktop.login1.Session"
    /// The manager's interface.
    static let managerInterface = "org.freedesktop.login1.Manager"
    /// The bus's own name: the sender of `NameOwnerChanged`.
    static let driverName = "org.freedesktop.DBus"

    /// logind's unique connection name (`:1.3`) while it owns its name.
    private let owner = Mutex<String?>(nil)
    private let report: @Sendable (Event) -> Void

    /// `report` gets every event, on the bus listener's queue.
    init(report: @escaping @Sendable (Event) -> Void) { self.report = report }

    /// Installs the matches, then asks who owns logind's name (matches first, so a change in
    /// between is not missed). For `BusListener.open`'s `setup`.
    func install(on connection: BusConnection) throws(BusError) {
        let logind = Self.busName
        try connection.addMatch(BusMatchRule(
            sender: Self.driverName, path: "/org/freedesktop/DBus", interface: Self.driverName,
            member: "NameOwnerChanged", arg0: logind)) { [self] in ownerChanged($0) }
        try connection.addMatch(BusMatchRule(
            sender: logind, pathNamespace: Self.sessionPaths, interface: Self.sessionInterface, member: "Unlock")) { [self] in
            if fromLogind($0) { report(.use("unlock")) }
        }
        try connection.addMatch(.propertiesChanged(sender: logind, pathNamespace: Self.sessionPaths,
                                                   interface: Self.sessionInterface)) { [self] in
            if fromLogind($0), let use = Self.sessionUse(in: $0) { report(.use(use)) }
        }
        try connection.addMatch(BusMatchRule(
            sender: logind, path: Self.managerPath, interface: Self.managerInterface, member: "PrepareForSleep")) { [self] in
            // true: going to sleep; false: resumed.
            if fromLogind($0), (try? $0.readBool()) == false { report(.use("resume")) }
        }
        let current: String?
        do throws(BusError) {
            current = try connection.call(destination: Self.driverName, path: "/org/freedesktop/DBus",
                                          interface: Self.driverName, member: "GetNameOwner", arguments: [logind]).readString()
        } catch let error where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            current = nil
        }
        owner.withLock { $0 = current }
        report(.present(current != nil))
    }

    /// Whether the signal was sent by the connection that owns logind's name now.
    private func fromLogind(_ message: BusMessage) -> Bool {
        guard let sender = message.sender else { return false }
        return owner.withLock { $0 == sender }
    }

    /// `NameOwnerChanged(name, old owner, new owner)`: logind came, left or was replaced.
    private func ownerChanged(_ message: BusMessage) {
        guard message.sender == Self.driverName,
              let name = try? message.readString(), name == Self.busName,
              (try? message.readString()) != nil, let newOwner = try? message.readString() else { return }
        let current = newOwner.isEmpty ? nil : newOwner
        owner.withLock { $0 = current }
        report(.present(current != nil))
    }

    /// `PropertiesChanged(interface, changed, invalidated)` of a session: what counts as a use.
    static func sessionUse(in message: BusMessage) -> String? {
        guard (try? message.readString()) == sessionInterface, let changed = try? message.readProperties() else { return nil }
        if changed["Active"] == .bool(true) { return "session active" }
        if changed["LockedHint"] == .bool(false) { return "session unlocked" }
        return nil
    }
}
