import Foundation

/// NetworkManager as far as fetchd sees it: owns `org.freedesktop.NetworkManager` on a private
/// bus and exports the manager object's `Metered` and `Connectivity` (through `Get`/`GetAll`).
/// Commands: `metered N` and `connectivity N` (set the property and send `PropertiesChanged`),
/// `forge N` (a connection owning no name sends `PropertiesChanged` with `Metered` = N, broadcast
/// and addressed to every other connection; NetworkManager's state does not change), `matches`
/// (the most match rules any other connection has installed, from the bus's statistics).
public final class FakeNetworkManager {
    public static let script = #"""
        import sys, dbus, dbus.bus, dbus.lowlevel, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        NAME = PATH_IFACE = "org.freedesktop.NetworkManager"
        PATH, PROPS = "/org/freedesktop/NetworkManager", "org.freedesktop.DBus.Properties"
        bus, forger = dbus.bus.BusConnection(sys.argv[1]), dbus.bus.BusConnection(sys.argv[1])
        state = {"Metered": dbus.UInt32(int(sys.argv[2])), "Connectivity": dbus.UInt32(int(sys.argv[3])),
                 "ActiveConnections": dbus.Array([], signature="o"), "Version": "1.42.0"}

        class Manager(dbus.service.Object):
            @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
            def Get(self, interface, name): return state[name]
            @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
            def GetAll(self, interface): return state

        manager = Manager(bus, PATH)
        bus.request_name(NAME, dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
        driver = bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")

        def changed(connection, name, value, destination=None):
            message = dbus.lowlevel.SignalMessage(PATH, PROPS, "PropertiesChanged")
            if destination: message.set_destination(destination)
            message.append(NAME, {name: dbus.UInt32(value)}, dbus.Array([], signature="s"), signature="sa{sv}as")
            connection.send_message(message)
            connection.flush()

        def others():
            own = {c.get_unique_name() for c in (bus, forger)}
            return [n for n in driver.ListNames(dbus_interface="org.freedesktop.DBus") if n.startswith(":") and n not in own]

        def rules(name):
            # A connection may leave between ListNames and this call: no rules then, and no crash.
            try: return int(driver.GetConnectionStats(name, dbus_interface="org.freedesktop.DBus.Debug.Stats")["MatchRules"])
            except dbus.exceptions.DBusException: return 0

        def command(line):
            number, word, *rest = line.split()
            value = ""
            if word in ("metered", "connectivity"):
                name = word.capitalize()
                state[name] = dbus.UInt32(int(rest[0]))
                changed(bus, name, int(rest[0]))
            elif word == "forge":
                for destination in [None] + others(): changed(forger, "Metered", int(rest[0]), destination)
            elif word == "matches": value = str(max([rules(n) for n in others()] + [0]))
            else: value = "unknown command"
            print(number, "ok", value, flush=True)

        """#

    private let peer: ScriptedBusPeer

    /// Starts NetworkManager on the bus at `address` with `Metered` and `Connectivity` set.
    public init(address: String, metered: Int, connectivity: Int) async throws {
        peer = try await ScriptedBusPeer(script: Self.script, arguments: [address, "\(metered)", "\(connectivity)"])
    }

    /// Sends a command (see the type's description).
    @discardableResult
    public func send(_ command: String) async throws -> String { try await peer.send(command) }

    /// Waits until another connection (fetchd) has installed at least `count` match rules.
    public func waitForMatches(atLeast count: Int) async throws -> Bool {
        try await peer.poll("matches") { $0 >= count }
    }
}
