import Foundation

/// power-profiles-daemon as far as fetchd sees it, on a private bus: 0.12's name
/// (`net.hadess.PowerProfiles`, mode "old"), 0.20's (`org.freedesktop.UPower.PowerProfiles`,
/// "new"), or both at once, one connection exporting the object at both paths as 0.20 does
/// ("both"). `ActiveProfile` is read through `Get`/`GetAll`, which also hold a container
/// property (`Profiles`) as the real one does.
///
/// Commands: `profile NAME` (set `ActiveProfile` and send `PropertiesChanged` at every exported
/// path), `release` and `own` (give up and take back the names: power-profiles-daemon stopping
/// and starting), `matches` (the most match rules any other connection has installed, from the
/// bus's statistics).
public final class FakePowerProfiles {
    /// The Python side: the names and objects of the mode, and the commands above.
    public static let script = #"""
        import sys, dbus, dbus.bus, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        PROPS = "org.freedesktop.DBus.Properties"
        NAMES = {"new": [("org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles")],
                 "old": [("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles")]}
        NAMES["both"] = NAMES["new"] + NAMES["old"]
        exported = NAMES[sys.argv[2]]
        bus = dbus.bus.BusConnection(sys.argv[1])
        state = {"ActiveProfile": sys.argv[3], "PerformanceDegraded": "",
                 "Profiles": dbus.Array([{"Profile": p, "Driver": "placeholder"} for p in ("power-saver", "balanced")],
                                        signature="a{sv}")}

        class Profiles(dbus.service.Object):
            @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
            def Get(self, interface, name): return state[name]
            @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
            def GetAll(self, interface): return state
            @dbus.service.signal(PROPS, signature="sa{sv}as")
            def PropertiesChanged(self, interface, changed, invalidated): pass

        objects = [(name, Profiles(bus, path)) for name, path in exported]
        def own():
            for name, _ in exported: bus.request_name(name, dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
        own()
        driver = bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")

        def others():
            return [n for n in driver.ListNames(dbus_interface="org.freedesktop.DBus")
                    if n.startswith(":") and n != bus.get_unique_name()]

        def rules(name):
            # A connection may leave between ListNames and this call: no rules then, and no crash.
            try: return int(driver.GetConnectionStats(name, dbus_interface="org.freedesktop.DBus.Debug.Stats")["MatchRules"])
            except dbus.exceptions.DBusException: return 0

        def command(line):
            number, word, *rest = line.split()
            value = ""
            if word == "profile":
                state["ActiveProfile"] = rest[0]
                for name, obj in objects:
                    obj.PropertiesChanged(name, {"ActiveProfile": rest[0]}, dbus.Array([], signature="s"))
                bus.flush()
            elif word == "release":
                for name, _ in exported: bus.release_name(name)
            elif word == "own": own()
            elif word == "matches": value = str(max([rules(n) for n in others()] + [0]))
            else: value = "unknown command"
            print(number, "ok", value, flush=True)

        """#

    private let peer: ScriptedBusPeer

    /// Starts power-profiles-daemon on the bus at `address` owning the names of `mode` ("old",
    /// "new" or "both") with `ActiveProfile` = `profile`.
    public init(address: String, mode: String, profile: String) async throws {
        peer = try await ScriptedBusPeer(script: Self.script, arguments: [address, mode, profile])
    }

    /// Sends a command (see the type's description).
    @discardableResult
    public func send(_ command: String) async throws -> String { try await peer.send(command) }

    /// Waits until another connection (fetchd) has installed at least `count` match rules.
    public func waitForMatches(atLeast count: Int) async throws -> Bool {
        try await peer.poll("matches") { $0 >= count }
    }
}
