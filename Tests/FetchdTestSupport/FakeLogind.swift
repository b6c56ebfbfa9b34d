import Foundation

/// logind as far as fetchd sees it (a `ScriptedBusPeer`): it owns `org.freedesktop.login1` on a private
/// bus, exports a manager and one session object (`/org/freedesktop/login1/session/_31`, whose
/// `Active` and `LockedHint` can be read), and emits logind's signals when told to on stdin.
/// A second connection can take the name over (a restarted logind); a third, owning no name,
/// plays a forger.
public final class FakeLogind {
    /// Commands, one per line as `<n> <command>`, each answered `<n> ok [value]`:
    /// `unlock` (Session.Unlock), `active` / `unlocked` / `locked` (PropertiesChanged of
    /// Active=true, LockedHint=false, LockedHint=true), `sleep` / `resume`
    /// (PrepareForSleep(true/false)), `forge` (the same signals from the forger, broadcast and
    /// addressed to every other connection), `release` (logind leaves the bus), `handover` (the
    /// second connection owns the name and sends the signals from now on), `matches` (the most
    /// match rules any other connection has installed, from the bus's statistics).
    public static let script = #"""
        import sys, dbus, dbus.bus, dbus.lowlevel, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        NAME, SESSION_IFACE, MANAGER_IFACE = "org.freedesktop.login1", "org.freedesktop.login1.Session", "org.freedesktop.login1.Manager"
        PROPS = "org.freedesktop.DBus.Properties"
        SESSION, MANAGER = "/org/freedesktop/login1/session/_31", "/org/freedesktop/login1"
        bus, heir, forger = (dbus.bus.BusConnection(sys.argv[1]) for _ in range(3))
        owner = [bus]
        state = {"Id": "31", "Active": False, "LockedHint": True}

        class Session(dbus.service.Object):
            @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
            def Get(self, interface, name): return state[name]

        class Manager(dbus.service.Object):
            @dbus.service.method(MANAGER_IFACE, out_signature="a(susso)")
            def ListSessions(self): return [("31", dbus.UInt32(1000), "user", "seat0", dbus.ObjectPath(SESSION))]

        session, manager = Session(bus, SESSION), Manager(bus, MANAGER)
        bus.request_name(NAME, dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
        driver = bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")

        def signal(connection, path, iface, member, signature="", args=(), destination=None):
            message = dbus.lowlevel.SignalMessage(path, iface, member)
            if destination: message.set_destination(destination)
            if signature: message.append(signature=signature, *args)
            connection.send_message(message)
            connection.flush()

        def changed(name, value):
            state[name] = value
            signal(owner[0], SESSION, PROPS, "PropertiesChanged", "sa{sv}as",
                   [SESSION_IFACE, {name: dbus.Boolean(value)}, dbus.Array([], signature="s")])

        def others():
            own = {c.get_unique_name() for c in (bus, heir, forger)}
            return [n for n in driver.ListNames(dbus_interface="org.freedesktop.DBus") if n.startswith(":") and n not in own]

        def forge():
            for destination in [None] + others():
                signal(forger, SESSION, SESSION_IFACE, "Unlock", destination=destination)
                signal(forger, SESSION, PROPS, "PropertiesChanged", "sa{sv}as",
                       [SESSION_IFACE, {"Active": dbus.Boolean(True), "LockedHint": dbus.Boolean(False)},
                        dbus.Array([], signature="s")], destination)
                signal(forger, MANAGER, MANAGER_IFACE, "PrepareForSleep", "b", [False], destination)

        def rules(name):
            # A connection may leave between ListNames and this call (fetchd leaving the bus):
            # it has no rules then, and the script must not die of it.
            try: return int(driver.GetConnectionStats(name, dbus_interface="org.freedesktop.DBus.Debug.Stats")["MatchRules"])
            except dbus.exceptions.DBusException: return 0

        def matches():
            return max([rules(n) for n in others()] + [0])

        def command(line):
            number, word = line.split()
            value = ""
            if word == "unlock": signal(owner[0], SESSION, SESSION_IFACE, "Unlock")
            elif word == "active": changed("Active", True)
            elif word == "unlocked": changed("LockedHint", False)
            elif word == "locked": changed("LockedHint", True)
            elif word in ("sleep", "resume"): signal(owner[0], MANAGER, MANAGER_IFACE, "PrepareForSleep", "b", [word == "sleep"])
            elif word == "forge": forge()
            elif word == "release": owner[0].release_name(NAME)
            elif word == "handover":
                owner[0] = heir
                heir.request_name(NAME, dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
            elif word == "matches": value = str(matches())
            else: value = "unknown command"
            print(number, "ok", value, flush=True)

        """#

    private let peer: ScriptedBusPeer

    /// Starts logind on the bus at `address` and waits until it owns its name.
    public init(address: String) async throws {
        peer = try await ScriptedBusPeer(script: Self.script, arguments: [address])
    }

    /// Sends a command and returns its answer's value.
    @discardableResult
    public func send(_ command: String) async throws -> String { try await peer.send(command) }

    /// Polls `matches` until some other connection has installed at least `count` match rules.
    public func waitForMatches(atLeast count: Int) async throws -> Bool {
        try await peer.poll("matches") { $0 >= count }
    }

    /// Polls `matches` until no other connection has more than `count` match rules.
    public func waitForMatches(atMost count: Int) async throws -> Bool {
        try await peer.poll("matches") { $0 <= count }
    }
}
