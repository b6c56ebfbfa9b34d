import FetchdClient
import FetchdTestSupport
import Testing

/// fetchd offering its D-Bus API on a private session bus, and a `FetchdClient` connected to
/// it once fetchd owns its name: what the client library's tests and the Swift example's share.
struct BusDaemon {
    let folder: TemporaryDirectory
    let bus: PrivateBus
    let daemon: DaemonProcess
    let fetchd: FetchdClient

    /// Starts the bus and the daemon; returns when a call reaches fetchd.
    init() async throws {
        folder = try TemporaryDirectory("fetchd-client")
        bus = PrivateBus(socketPath: folder.file("bus"))
        try await bus.start()
        daemon = try DaemonProcess(handlers: "", heartbeat: "1h", extraMain: "dbus_api = \"session\"")
        try await daemon.start(environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        fetchd = try await FetchdClient(.address(bus.address))
        let client = fetchd
        // Until fetchd owns its name, the bus answers ServiceUnknown.
        #expect(await eventually(timeoutSeconds: 10, pollMilliseconds: 100) { (try? await client.handlers()) != nil },
                "fetchd never took its bus name")
    }

    /// Closes the client, stops the daemon (expecting a clean exit) and the bus.
    func stop() async {
        fetchd.close()
        let (code, log) = await daemon.stopWithoutBlocking()
        #expect(code == 0, "\(log)")
        await bus.stop()
    }
}
