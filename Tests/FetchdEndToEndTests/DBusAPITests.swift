import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The D-Bus API (`org.fetchd.Fetchd1`) end to end: the real fetchd serving on a private
/// dbus-daemon that accepts every uid, driven by the Python example client
/// (`examples/python/fetchd-client.py`, python3-dbus) as root and as `nobody`.
@Suite(.serialized)
struct DBusAPITests {
    /// A bus any uid may reach, in a folder `nobody` can enter, with the client beside it.
    struct Bus {
        let folder: TemporaryDirectory
        let bus: PrivateBus
        let client: String

        init() async throws {
            folder = try TemporaryDirectory("fetchd-dbus")
            chmod(folder.path, 0o755)
            bus = PrivateBus(socketPath: folder.file("bus"), anyUser: true)
            client = folder.file("fetchd-client.py")
            try FileManager.default.copyItem(atPath: TestBinaries.sourceTree + "/examples/python/fetchd-client.py", toPath: client)
            chmod(client, 0o755)
            try await bus.start()
        }

        /// Waits until `list` prints `expected` (any output when nil), within 10 s.
        func waitForList(_ expected: String? = nil) async -> Bool {
            await eventually(timeoutSeconds: 10, pollMilliseconds: 200) {
                guard let result = try? await run(["list"]) else { return false }
                return result.status == 0 && (expected == nil || result.output == expected)
            }
        }

        /// A daemon offering the API on this bus, started, its name taken. `offline`: in a
        /// network namespace of its own whose `lo` is down, so the handlers `nobody` registers
        /// (global addresses only) fail at once instead of reaching out.
        func daemon(extraMain: String = "", offline: Bool = false) async throws -> DaemonProcess {
            let daemon = try DaemonProcess(handlers: "", heartbeat: "1h", extraMain: "dbus_api = \"session\"\n" + extraMain)
            try await daemon.start(environment: environment, launcher: offline ? [try #require(RedirectPolicyTests.unshare), "--net"] : [])
            #expect(await waitForList(), "fetchd never took its bus name")
            return daemon
        }

        /// The daemon's environment: this bus as the session bus.
        var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": bus.address] }

        /// Runs the client with `arguments`, as `nobody` when asked.
        func run(_ arguments: [String], asNobody: Bool = false) async throws -> (status: Int32, output: String) {
            let user = asNobody ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
            let command = ["DBUS_SESSION_BUS_ADDRESS=\(bus.address)"] + user + ["/usr/bin/python3", client] + arguments
            return try await ChildProcess.runWithoutBlocking("/usr/bin/env", command)
        }
    }

    @Test func anApplicationRegistersFetchesAndReadsThroughTheDescriptor() async throws {
        let www = try TemporaryDirectory("fetchd-dbus-www")
        try "hello bus\n".write(toFile: www.file("news.txt"), atomically: true, encoding: .utf8)
        let server = try TestHTTPServer.files(in: www.path)
        let bus = try await Bus()
        let daemon = try await bus.daemon()

        let registered = try await bus.run(["register", "news", server.url("/news.txt")])
        #expect(registered.output == "news@\(getuid())\n", "\(registered.output)")
        // A registration is in force at once: its first fetch comes without waiting for the
        // heartbeat (an hour here), as a reload's new handler's does.
        #expect(await eventually(timeoutSeconds: 10, pollMilliseconds: 200) {
            (try? await bus.run(["status", "news"]))?.output.contains("last_result=newData") == true
        }, "the registered handler was not fetched until the next heartbeat")
        let fetched = try await bus.run(["fetch", "news", "20"])
        // Asked for, a second fetch: the content is the same.
        #expect(fetched.status == 0 && fetched.output == "noData \n", "\(fetched.output)")
        let read = try await bus.run(["read", "news"])
        #expect(read.output.contains("content_type=text/plain") && read.output.hasSuffix("\nhello bus\n"), "\(read.output)")
        #expect(read.output.contains("version=00000001-"), "\(read.output)")

        // The same keys and checks as a handler file; programs never come over the bus.
        let bad = try await bus.run(["register", "bad", server.url("/x"), "min_interval=5x", "retain=0", "bogus=1",
                                     "on_complete=[/bin/sh]"])
        #expect(bad.status == 1 && bad.output.contains("org.fetchd.Fetchd1.Error.InvalidArguments"), "\(bad.output)")
        for expected in ["min_interval: \"5x\" is not a duration", "retain: 0 is out of range", "bogus: unknown key",
                         "on_complete: not accepted over D-Bus"] {
            #expect(bad.output.contains(expected), "\(bad.output)")
        }
        let exec = try await bus.run(["register", "run", "http://example.com/", "kind=exec", "command=[/bin/true]"])
        #expect(exec.output.contains("command: not accepted over D-Bus"), "\(exec.output)")
        let missing = try await bus.run(["read", "nothere"])
        #expect(missing.output.contains("org.fetchd.Fetchd1.Error.NotFound"), "\(missing.output)")

        // The snapshot is not in the world-readable cache.
        let folder = daemon.cachePath + "/.registered"
        var info = stat()
        #expect(stat(folder, &info) == 0 && info.st_mode & 0o077 == 0, "the registered handlers' folder is readable by others")

        // fetchctl shows it with its origin; a restart keeps it.
        let status = try await daemon.fetchctlWithoutBlocking(["status", "news@\(getuid())"])
        #expect(status.output.contains("defined in D-Bus registration by uid \(getuid())"), "\(status.output)")
        try await daemon.restart(environment: bus.environment)
        #expect(await bus.waitForList("news\n"))
        let again = try await bus.run(["read", "news"])
        #expect(again.output.hasSuffix("\nhello bus\n"), "\(again.output)")
        let (code, log) = await daemon.stopWithoutBlocking()
        #expect(code == 0, "\(log)")
        await bus.bus.stop()
    }

    /// `nobody` registers its own `news`, may not reach root's, nor a loopback address.
    @Test(.enabled(if: RedirectPolicyTests.canRun, "runs the client as nobody, the daemon in a network namespace"))
    func anotherUIDHasItsOwnNamespace() async throws {
        let bus = try await Bus()
        let daemon = try await bus.daemon(offline: true)
        let loopbackURL = "http://127.0.0.1:9/news.txt"
        #expect(try await bus.run(["register", "news", loopbackURL]).output == "news@0\n")
        let loopback = try await bus.run(["register", "news", loopbackURL], asNobody: true)
        #expect(loopback.output.contains("url: 127.0.0.1 is a loopback address"), "\(loopback.output)")
        let proxy = try await bus.run(["register", "news", "https://example.com/", "proxy=http://proxy.example:3128"], asNobody: true)
        #expect(proxy.output.contains("proxy: only root and the control group may set it"), "\(proxy.output)")
        let own = try await bus.run(["register", "news", "https://example.com/news"], asNobody: true)
        #expect(own.output == "news@65534\n", "\(own.output)")
        #expect(try await bus.run(["list"], asNobody: true).output == "news\n")
        let others = try await bus.run(["read", "news@0"], asNobody: true)
        #expect(others.output.contains("org.fetchd.Fetchd1.Error.NotPermitted"), "\(others.output)")
        let unregistered = try await bus.run(["unregister", "news"], asNobody: true)
        #expect(unregistered.status == 0, "\(unregistered.output)")
        #expect(try await bus.run(["list"]).output == "news\n", "root's news is untouched")
        let (code, log) = await daemon.stopWithoutBlocking()
        #expect(code == 0, "\(log)")
        await bus.bus.stop()
    }

    /// An unprivileged uid's registrations are held to the `dbus_max_*` quotas, and FetchNow
    /// to its fetches per day.
    @Test(.enabled(if: RedirectPolicyTests.canRun, "runs the client as nobody, the daemon in a network namespace"))
    func quotasHoldAnUnprivilegedUID() async throws {
        let bus = try await Bus()
        let daemon = try await bus.daemon(extraMain: "dbus_max_handlers = 2\ndbus_max_fetches_per_day = 2\ndbus_max_bytes = 6000000",
                                          offline: true)
        for name in ["a", "b"] {
            let registered = try await bus.run(["register", name, "http://\(RemoteAddresses.unreachable)/\(name)", "budget=1/day", "max_bytes=1000000"],
                                               asNobody: true)
            #expect(registered.output == "\(name)@65534\n", "\(registered.output)")
        }
        let third = try await bus.run(["register", "c", "http://\(RemoteAddresses.unreachable)/c", "budget=1/day", "max_bytes=1000000"], asNobody: true)
        #expect(third.output.hasPrefix("ERROR org.fetchd.Fetchd1.Error.QuotaExceeded:"), "\(third.output)")
        for expected in ["(dbus_max_handlers = 2)", "cache bytes (max_bytes × retain): 3000000 asked, 0 of 6000000 left",
                         "fetches per day: 1 asked, 0 of 2 left"] {
            #expect(third.output.contains(expected), "\(third.output)")
        }
        // Root is held to the handler count alone.
        #expect(try await bus.run(["register", "c", "http://\(RemoteAddresses.unreachable)/c"]).output == "c@0\n")
        // Each registration's first fetch (failed: no network here) counts; then FetchNow is refused.
        #expect(await eventually(timeoutSeconds: 15, pollMilliseconds: 200) {
            let a = try? await bus.run(["status", "a"], asNobody: true), b = try? await bus.run(["status", "b"], asNobody: true)
            return a?.output.contains("last_result=") == true && b?.output.contains("last_result=") == true
        })
        let refused = try await bus.run(["fetch", "a", "5"], asNobody: true)
        #expect(refused.output.hasPrefix("ERROR org.fetchd.Fetchd1.Error.QuotaExceeded: your handlers fetched 2 times in the last 24 hours"),
                "\(refused.output)")
        let (code, log) = await daemon.stopWithoutBlocking()
        #expect(code == 0, "\(log)")
        await bus.bus.stop()
    }

    /// The installed interface description is what the daemon introspects, for the main
    /// object's interface and a handler object's.
    @Test func theInstalledInterfacesAreWhatTheDaemonIntrospects() async throws {
        let bus = try await Bus()
        let daemon = try await bus.daemon()
        #expect(try await bus.run(["register", "news", "http://127.0.0.1:9/news"]).output == "news@\(getuid())\n")
        let object = try await bus.run(["object", "news"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(object == "/org/fetchd/Fetchd1/handler/news_40\(getuid())", "\(object)")
        let installed = try String(contentsOfFile: TestBinaries.sourceTree + "/systemd/dbus/org.fetchd.Fetchd1.xml", encoding: .utf8)
        for (name, path) in [("org.fetchd.Fetchd1", "/org/fetchd/Fetchd1"), ("org.fetchd.Fetchd1.Handler", object)] {
            let live = try await ChildProcess.runWithoutBlocking("/usr/bin/env", [
                "DBUS_SESSION_BUS_ADDRESS=\(bus.bus.address)", "busctl", "--user", "introspect", "--xml-interface", "org.fetchd.Fetchd1", path,
            ])
            let liveInterface = Self.interface(name, in: live.output), installedInterface = Self.interface(name, in: installed)
            #expect(liveInterface != nil && liveInterface == installedInterface,
                    "\(name) in systemd/dbus/org.fetchd.Fetchd1.xml differs from the daemon's:\n\(live.output)")
        }
        _ = await daemon.stopWithoutBlocking()
        await bus.bus.stop()
    }

    /// A handler object's properties are its status, and each change reaches the caller's uid
    /// as PropertiesChanged; another uid is told the object does not exist.
    @Test(.enabled(if: getuid() == 0, "asks as nobody too"))
    func aHandlersStatusIsItsObjectsProperties() async throws {
        let www = try TemporaryDirectory("fetchd-dbus-www")
        try "hello bus\n".write(toFile: www.file("news.txt"), atomically: true, encoding: .utf8)
        let server = try TestHTTPServer.files(in: www.path)
        let bus = try await Bus()
        let daemon = try await bus.daemon()
        _ = try await bus.run(["register", "news", server.url("/news.txt")])
        let object = try await bus.run(["object", "news"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        func property(_ name: String, asNobody: Bool = false) async throws -> String {
            let user = asNobody ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
            return try await ChildProcess.runWithoutBlocking("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.bus.address)"] + user + [
                "busctl", "--user", "get-property", "org.fetchd.Fetchd1", object, "org.fetchd.Fetchd1.Handler", name,
            ]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try await property("Name") == "s \"news\"")
        // The registration's first fetch.
        #expect(await eventually(timeoutSeconds: 10, pollMilliseconds: 200) { (try? await property("LastResult")) == "s \"newData\"" })
        let version = try await property("Version")
        let (address, client) = (bus.bus.address, bus.client)
        let watching = Task {
            try await ChildProcess.runWithoutBlocking("/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(address)", "/usr/bin/python3", client, "watch", "8"])
        }
        try await Task.sleep(for: .seconds(2))
        let fetched = try await bus.run(["fetch", "news", "10"])
        #expect(fetched.output.hasPrefix("noData "), "\(fetched.output)")
        #expect(try await property("LastResult") == "s \"noData\"")
        #expect(try await property("Version") == version && version.hasPrefix("s \"00000001-"), "\(version)")
        // Only what changed: the result and the times, not the version.
        let watched = try await watching.value.output
        #expect(watched.contains("PropertiesChanged \(object) org.fetchd.Fetchd1.Handler ") && watched.contains("LastResult=noData")
                && watched.contains("LastAttemptAt=") && !watched.contains("Version="), "\(watched)")
        let nobody = try await property("LastResult", asNobody: true)
        #expect(nobody.contains("Unknown object") || nobody.contains("UnknownObject"), "\(nobody)")
        _ = await daemon.stopWithoutBlocking()
        await bus.bus.stop()
    }

    /// The `<interface name="NAME">` element, comments dropped and whitespace between tags
    /// removed.
    static func interface(_ name: String, in xml: String) -> String? {
        let withoutComments = xml.replacingOccurrences(of: "<!--[\\s\\S]*?-->", with: "", options: .regularExpression)
        guard let start = withoutComments.range(of: "<interface name=\"\(name)\">"),
              let end = withoutComments.range(of: "</interface>", range: start.upperBound..<withoutComments.endIndex) else { return nil }
        return String(withoutComments[start.lowerBound..<end.upperBound])
            .replacingOccurrences(of: ">\\s+<", with: "><", options: .regularExpression)
    }
}
