#!/usr/bin/python3
"""A small client of fetchd's D-Bus API (org.fetchd.Fetchd1, fetchd-dbus(7)), with Debian's
python3-dbus and python3-gi: what an application does to have its content fetched in the
background and to read it.

    fetchd-client.py [--system] register NAME URL [KEY=VALUE...]
    fetchd-client.py [--system] fetch NAME [TIMEOUT_S]   FetchNow, wait for FetchCompleted, read it
    fetchd-client.py [--system] read NAME                 OpenSnapshot: metadata, then the content
    fetchd-client.py [--system] status NAME | object NAME | use NAME | unregister NAME | list
    fetchd-client.py [--system] watch SECONDS             print every FetchCompleted and PropertiesChanged seen

KEY=VALUE options are the keys of a handler file (fetchd.toml(5)): a value that reads as an
integer is sent as one (x), true/false as a boolean (b), [a,b] as an array of strings (as),
anything else as a string (s). Errors print "ERROR NAME: MESSAGE" and exit 1.
"""
import os
import sys

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

BUS_NAME = "org.fetchd.Fetchd1"
PATH = "/org/fetchd/Fetchd1"
INTERFACE = "org.fetchd.Fetchd1"


def option_value(text):
    if text in ("true", "false"):
        return dbus.Boolean(text == "true")
    if text.startswith("[") and text.endswith("]"):
        return dbus.Array([item for item in text[1:-1].split(",") if item], signature="s")
    try:
        return dbus.Int64(int(text))
    except ValueError:
        return dbus.String(text)


def main(arguments):
    DBusGMainLoop(set_as_default=True)
    system = arguments[:1] == ["--system"]
    arguments = arguments[1:] if system else arguments
    bus = dbus.SystemBus() if system else dbus.SessionBus()
    fetchd = dbus.Interface(bus.get_object(BUS_NAME, PATH), INTERFACE)
    command, rest = arguments[0], arguments[1:]
    if command == "register":
        options = {"kind": "http", "url": rest[1]}
        for pair in rest[2:]:
            key, _, value = pair.partition("=")
            options[key] = value
        typed = dbus.Dictionary({key: option_value(value) if key not in ("kind", "url") else dbus.String(value)
                                 for key, value in options.items()}, signature="sv")
        print(fetchd.RegisterHandler(rest[0], typed))
    elif command == "fetch":
        name, timeout = rest[0], float(rest[1]) if len(rest) > 1 else 30
        loop, outcome = GLib.MainLoop(), {}

        def completed(handler, result, version):
            if handler == name:
                outcome.update(result=str(result), version=str(version))
                loop.quit()

        bus.add_signal_receiver(completed, signal_name="FetchCompleted", dbus_interface=INTERFACE, path=PATH)
        fetchd.FetchNow(name, dbus.Dictionary({}, signature="sv"))
        GLib.timeout_add(int(timeout * 1000), loop.quit)
        loop.run()
        if not outcome:
            print("ERROR timeout: no FetchCompleted for %s within %s s" % (name, timeout))
            return 1
        print("%s %s" % (outcome["result"], outcome["version"]))
    elif command == "watch":
        # Asks to eavesdrop as well: the bus must still keep other uids' signals away.
        loop = GLib.MainLoop()
        rules = []
        for interface in (INTERFACE, "org.freedesktop.DBus.Properties"):
            rules += ["type='signal',interface='%s',eavesdrop='true'" % interface, "type='signal',interface='%s'" % interface]
        for rule in rules:
            try:
                bus.add_match_string(rule)
            except dbus.exceptions.DBusException as refused:
                print("# match %s refused: %s" % (rule, refused.get_dbus_name()))

        def seen(connection, message):
            if message.get_member() == "FetchCompleted":
                print(" ".join(str(argument) for argument in message.get_args_list()))
            elif message.get_member() == "PropertiesChanged":
                interface, changed = message.get_args_list()[:2]
                print("PropertiesChanged %s %s %s" % (message.get_path(), interface,
                                                     " ".join("%s=%s" % item for item in sorted(changed.items()))))
            sys.stdout.flush()

        bus.add_message_filter(seen)
        fetchd.ListHandlers()  # a caller: fetchd directs its uid's signals to this connection
        print("# watching")
        sys.stdout.flush()
        GLib.timeout_add(int(float(rest[0]) * 1000), loop.quit)
        loop.run()
    elif command == "read":
        descriptor, metadata = fetchd.OpenSnapshot(rest[0], dbus.Dictionary({}, signature="sv"))
        fd = descriptor.take()
        for key in sorted(metadata):
            print("%s=%s" % (key, metadata[key]))
        with os.fdopen(fd, "rb") as content:
            sys.stdout.write("\n" + content.read().decode("utf-8", "replace"))
    elif command == "object":
        print(fetchd.GetHandlerObject(rest[0]))
    elif command == "status":
        for key, value in sorted(fetchd.GetHandler(rest[0]).items()):
            print("%s=%s" % (key, value))
    elif command == "use":
        fetchd.ReportUse(rest[0])
    elif command == "unregister":
        fetchd.UnregisterHandler(rest[0])
    elif command == "list":
        for name in fetchd.ListHandlers():
            print(name)
    else:
        print("ERROR usage: unknown command %s" % command)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except dbus.exceptions.DBusException as error:
        print("ERROR %s: %s" % (error.get_dbus_name(), error.get_dbus_message()))
        sys.exit(1)
