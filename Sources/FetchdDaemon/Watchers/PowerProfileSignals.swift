import FetchdSystemd
import Synchronization

/// power-profiles-daemon's `ActiveProfile` on a system bus connection, read once and then
/// followed through its `PropertiesChanged` signal, never polled.
///
/// It has two names. 0.12 (Debian 12) owns `net.hadess.PowerProfiles` at
/// `/net/hadess/PowerProfiles`; 0.20 and later own `org.freedesktop.UPower.PowerProfiles` at
/// `/org/freedesktop/UPower/PowerProfiles` and the old name too, exporting one object at both
/// paths, so each change comes as two signals. Only the preferred name that has an owner is
/// followed (the new one first): its signals count, the other's are ignored, and a change
/// counts once.
///
/// Only power-profiles-daemon may say so. As for NetworkManager (`NetworkManagerSignals`), the
/// owners of the names are followed through `NameOwnerChanged` (sent only by the bus), and every
/// signal's sender must own the name it speaks for.
final class PowerProfileSignals: BusSignals {
    /// What was seen.
    enum Event: Sendable, Equatable {
        /// The active profile ("power-saver", "balanced", "performance"), on connecting and at
        /// every change.
        case profile(String)
        /// Neither name is on the bus (or the last one just left).
        case absent
        /// The name to follow changed (one appeared, or the preferred one left while the other
        /// stays): read the profile (`readProfile(on:)`) through the listener.
        case appeared
    }

    /// One of power-profiles-daemon's names, its object and its interface (named as the name).
    struct Name: Sendable, Equatable {
        /// The well-known bus name, also the interface of `ActiveProfile`.
        let busName: String
        /// The object that has the property.
        let path: String
    }

    /// The names in the order they are preferred: 0.20's, then 0.12's.
    static let names = [
        Name(busName: "org.freedesktop.UPower.PowerProfiles", path: "/org/freedesktop/UPower/PowerProfiles"),
        Name(busName: "net.hadess.PowerProfiles", path: "/net/hadess/PowerProfiles"),
    ]
    /// The properties interface.
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    /// The unique connection name owning each well-known name, by well-known name.
    private let owners = Mutex<[String: String]>([:])
    private let report: @Sendable (Event) -> Void

    /// `report` gets every event, on the bus listener's queue.
    init(report: @escaping @Sendable (Event) -> Void) { self.report = report }

    /// Installs the matches, then asks who owns each name and reads the profile (matches first,
    /// so a change in between is not missed). For `BusListener.open`'s `setup`.
    func install(on connection: BusConnection) throws(BusError) {
        let driver = LogindSignals.driverName
        for name in Self.names {
            try connection.addMatch(BusMatchRule(
                sender: driver, path: "/org/freedesktop/DBus", interface: driver,
                member: "NameOwnerChanged", arg0: name.busName)) { [self] in ownerChanged($0) }
            try connection.addMatch(BusMatchRule(
                sender: name.busName, path: name.path, interface: Self.propertiesInterface,
                member: "PropertiesChanged", arg0: name.busName)) { [self] in propertiesChanged($0, of: name) }
        }
        var found: [String: String] = [:]
        for name in Self.names {
            do throws(BusError) {
                found[name.busName] = try connection.call(
                    destination: driver, path: "/org/freedesktop/DBus", interface: driver,
                    member: "GetNameOwner", arguments: [name.busName]).readString()
            } catch let error where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
                continue
            }
        }
        owners.withLock { $0 = found }
        try readProfile(on: connection)
    }

    /// The name followed now: the first of `names` that has an owner.
    private func followed(_ owners: [String: String]) -> Name? {
        Self.names.first { owners[$0.busName] != nil }
    }

    /// Reads `ActiveProfile` of the name followed (one `GetAll`) and reports it, or reports
    /// that neither name is on the bus.
    func readProfile(on connection: BusConnection) throws(BusError) {
        guard let name = owners.withLock({ followed($0) }) else {
            report(.absent)
            return
        }
        let properties = try connection.call(destination: name.busName, path: name.path,
                                             interface: Self.propertiesInterface, member: "GetAll",
                                             arguments: [name.busName]).readProperties()
        if case .string(let profile) = properties["ActiveProfile"] {
            report(.profile(profile))
        } else {
            throw BusError(operation: "read \(name.busName)'s ActiveProfile",
                           reason: "it is not a string property of \(name.path); is this power-profiles-daemon?")
        }
    }

    /// `PropertiesChanged(interface, changed, invalidated)` at `name`'s object: counts only from
    /// the owner of the name followed, and only for that name's object.
    private func propertiesChanged(_ message: BusMessage, of name: Name) {
        guard let sender = message.sender, (try? message.readString()) == name.busName,
              let changed = try? message.readProperties(), case .string(let profile) = changed["ActiveProfile"] else { return }
        let counts = owners.withLock { owners in followed(owners) == name && owners[name.busName] == sender }
        if counts { report(.profile(profile)) }
    }

    /// `NameOwnerChanged(name, old owner, new owner)`: one of the names came, left or was
    /// replaced.
    private func ownerChanged(_ message: BusMessage) {
        guard message.sender == LogindSignals.driverName,
              let busName = try? message.readString(), Self.names.contains(where: { $0.busName == busName }),
              (try? message.readString()) != nil, let newOwner = try? message.readString() else { return }
        let present = owners.withLock { owners in
            owners[busName] = newOwner.isEmpty ? nil : newOwner
            return followed(owners) != nil
        }
        report(present ? .appeared : .absent)
    }
}
