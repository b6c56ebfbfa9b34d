@testable import FetchdDaemon
import FetchdSystemd
import FetchdTestSupport
import Foundation
import Synchronization
import Testing

/// Waiting for a missing bus socket without a timer: which addresses have a socket path, and
/// the wait ending when the socket appears.
struct BusSocketWaitTests {
    @Test func theSocketPathComesFromTheAddress() {
        #expect(BusSocketWait.socketPath(of: .system, environment: [:]) == "/run/dbus/system_bus_socket")
        #expect(BusSocketWait.socketPath(of: .system, environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/tmp/b,guid=1;tcp:host=x"])
                == "/tmp/b")
        #expect(BusSocketWait.socketPath(of: .address("unix:abstract=/tmp/x"), environment: [:]) == nil)
        #expect(BusSocketWait.socketPath(of: .address("tcp:host=localhost,port=1"), environment: [:]) == nil)
        #expect(BusSocketWait.socketPath(of: .user, environment: [:]) == nil)
    }

    @Test func theWaitEndsWhenTheSocketAppears() async throws {
        let directory = try TemporaryDirectory("socket-wait")
        defer { directory.remove() }
        let path = directory.file("bus")
        let wait = BusSocketWait(label: "test-socket-wait")
        let appeared = Mutex(0)
        #expect(wait.start(for: .address("unix:path=\(path)")) { appeared.withLock { $0 += 1 } })
        try directory.write("", to: "other")
        try await Task.sleep(for: .milliseconds(200))
        #expect(appeared.withLock { $0 } == 0, "another entry is not the socket")
        try directory.write("", to: "bus")
        #expect(await waitUntil(timeoutSeconds: 10) { appeared.withLock { $0 } == 1 })
        #expect(!wait.start(for: .address("unix:path=\(path)")) {}, "it is there: no wait")
        #expect(!wait.start(for: .address("unix:path=\(directory.file("missing/bus"))")) {}, "no folder to watch")
    }
}
