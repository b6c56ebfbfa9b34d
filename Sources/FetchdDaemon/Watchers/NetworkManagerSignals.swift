import FetchdSystemd
import Synchronization

/// NetworkManager's view of the network on a system bus connection: its `Metered` and
/// `Connectivity` properties, read once and then followed through its `PropertiesChanged`
/// signal.
///
/// Only NetworkManager may say so. As for logind (`LogindSignals`), the matches are routed by
/// `sender='org.freedesktop.NetworkManager'`, and since any client may still address a signal to
/// fetchd's connection directly, the name's owner is followed (`NameOwnerChanged`, sent only by
/// the bus) and every signal's sender must be that owner.
final class NetworkManagerSignals: BusSignals {
    /// What was seen.
    enum Event: Sendable, Equatable {
        /// NetworkManager's current view (on connecting, and at every change).
        case state(NetworkState)
        /// NetworkManager is not on the bus (or just left it).
        case absent
        /// NetworkManager (re)appeared: read its properties (`readState(on:)`) through the listener.
        case appeared
    }

    /// NetworkManager's well-known name, and also its manager object's interface.
    static let busName = "org.freedesktop.NetworkManager"
    /// The manager object.
    static let managerPath = "/org/freedesktop/NetworkManager"
    /// The properties interface.
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    private struct Known {
        /// NetworkManager's unique connection name while it owns its name.
        var owner: String?
        var metered: Int64?
        var connectivity: Int64?
    }
    private let known = Mutex(Known())
    private let report: @Sendable (Event) -> Void

    /// `report` gets every event, on the bus listener's queue.
    init(report: @escaping @Sendable (Event) -> Void) { self.report = report }

    /// Installs the matches, then asks who owns NetworkManager's name and reads its properties
    /// (matches first, so a change in between is not missed). For `BusListener.open`'s `setup`.
    func install(on connection: BusConnection) throws(BusError) {
        let driver = LogindSignals.driverName
        try connection.addMatch(BusMatchRule(
            sender: driver, path: "/org/freedesktop/DBus", interface: driver,
            member: "NameOwnerChanged", arg0: Self.busName)) { [self] in ownerChanged($0) }
        try connection.addMatch(BusMatchRule(
            sender: Self.busName, path: Self.managerPath, interface: Self.propertiesInterface,
            member: "PropertiesChanged", arg0: Self.busName)) { [self] in propertiesChanged($0) }
        let current: String?
        do throws(BusError) {
            current = try connection.call(destination: driver, path: "/org/freedesktop/DBus", interface: driver,
                                          member: "GetNameOwner", arguments: [Self.busName]).readString()
        } catch let error where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            current = nil
        }
        known.withLock { $0.owner = current }
        if current == nil { report(.absent) } else { try readState(on: connection) }
    }

    /// Reads `Metered` and `Connectivity` (one `GetAll`) and reports the state.
    func readState(on connection: BusConnection) throws(BusError) {
        let properties = try connection.call(destination: Self.busName, path: Self.managerPath,
                                             interface: Self.propertiesInterface, member: "GetAll",
                                             arguments: [Self.busName]).readProperties()
        let state = known.withLock { known in
            known.metered = properties["Metered"]?.integerValue
            known.connectivity = properties["Connectivity"]?.integerValue
            return NetworkState.networkManager(metered: known.metered, connectivity: known.connectivity)
        }
        report(.state(state))
    }

    /// `PropertiesChanged(interface, changed, invalidated)` from the name's owner.
    private func propertiesChanged(_ message: BusMessage) {
        guard let sender = message.sender, (try? message.readString()) == Self.busName,
              let changed = try? message.readProperties() else { return }
        let state = known.withLock { known -> NetworkState? in
            guard known.owner == sender else { return nil }  // not NetworkManager: ignored
            let metered = changed["Metered"]?.integerValue, connectivity = changed["Connectivity"]?.integerValue
            guard metered != nil || connectivity != nil else { return nil }
            known.metered = metered ?? known.metered
            known.connectivity = connectivity ?? known.connectivity
            return NetworkState.networkManager(metered: known.metered, connectivity: known.connectivity)
        }
        if let state { report(.state(state)) }
    }

    /// `NameOwnerChanged(name, old owner, new owner)`: NetworkManager came, left or was replaced.
    private func ownerChanged(_ message: BusMessage) {
        guard message.sender == LogindSignals.driverName,
              let name = try? message.readString(), name == Self.busName,
              (try? message.readString()) != nil, let newOwner = try? message.readString() else { return }
        let current = newOwner.isEmpty ? nil : newOwner
        known.withLock { $0 = Known(owner: current) }
        report(current == nil ? .absent : .appeared)
    }
}

extension BusMessage.Value {
    /// The value of an integer (signed or unsigned) property; nil for other types.
    var integerValue: Int64? {
        switch self {
        case .integer(let value): value
        case .unsigned(let value): Int64(exactly: value)
        default: nil
        }
    }
}
