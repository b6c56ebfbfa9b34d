import FetchdSystemd
import FetchdTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The sd-bus wrapper on its own, against a private dbus-daemon and the fake logind: match
/// rules, signals with a property map, method calls with arguments, variants, D-Bus errors,
/// closing. (The session watcher uses it for logind; the same calls serve any service that
/// announces its state through `PropertiesChanged`, NetworkManager for one.)
@Suite(.serialized)
struct BusListenerTests {
    /// What the listener's match handler saw.
    private final class Seen: Sendable {
        private let changes = Mutex<[[String: BusMessage.Value]]>([])
        func append(_ change: [String: BusMessage.Value]) { changes.withLock { $0.append(change) } }
        var all: [[String: BusMessage.Value]] { changes.withLock { $0 } }
    }

    @Test func matchRulesAreWrittenOutWithEveryField() {
        let rule = BusMatchRule.propertiesChanged(sender: "org.freedesktop.NetworkManager",
                                                  pathNamespace: "/org/freedesktop/NetworkManager",
                                                  interface: "org.freedesktop.NetworkManager")
        #expect(rule.description == "type='signal',sender='org.freedesktop.NetworkManager',"
            + "path_namespace='/org/freedesktop/NetworkManager',interface='org.freedesktop.DBus.Properties',"
            + "member='PropertiesChanged',arg0='org.freedesktop.NetworkManager'")
        #expect(BusMatchRule(member: "Unlock", arg0: "it's").description == "type='signal',member='Unlock',arg0='it'\\''s'")
    }

    @Test func aListenerReceivesPropertyChangesAndCallsMethods() async throws {
        let directory = try TemporaryDirectory("bus-listener")
        defer { directory.remove() }
        let bus = PrivateBus(socketPath: directory.file("bus"))
        try await bus.start()
        let logind = try await FakeLogind(address: bus.address)
        let seen = Seen()
        let closed = Mutex<BusError?>(nil)
        let listener = try await BusListener.open(.address(bus.address), label: "test-bus-listener", setup: { connection throws(BusError) in
            try connection.addMatch(.propertiesChanged(sender: "org.freedesktop.login1", pathNamespace: "/org/freedesktop/login1",
                                                       interface: "org.freedesktop.login1.Session")) { message in
                guard (try? message.readString()) == "org.freedesktop.login1.Session",
                      let changed = try? message.readProperties() else { return }
                seen.append(changed)
            }
        }, onClose: { error in closed.withLock { $0 = error } })

        // A method call with arguments, its reply a variant.
        let session = "/org/freedesktop/login1/session/_31"
        let active = try await listener.perform { connection throws(BusError) in
            try connection.call(destination: "org.freedesktop.login1", path: session, interface: "org.freedesktop.DBus.Properties",
                                member: "Get", arguments: ["org.freedesktop.login1.Session", "Active"]).readVariant()
        }
        #expect(active == .bool(false))
        // A D-Bus error keeps its name.
        do throws(BusError) {
            try await listener.perform { connection throws(BusError) in
                _ = try connection.call(destination: "org.freedesktop.login1.Nobody", path: "/", interface: "x.y", member: "Z")
            }
            Issue.record("a call to a name nobody owns succeeded")
        } catch {
            #expect(error.name == "org.freedesktop.DBus.Error.ServiceUnknown", "\(error)")
        }

        // A quote in a value cannot smuggle a field into a rule: sd-bus refuses the rule.
        let quoted: Result<Void, BusError>
        do throws(BusError) {
            quoted = .success(try await listener.perform { connection throws(BusError) in
                try connection.addMatch(BusMatchRule(member: "Unlock", arg0: "x',sender='y")) { _ in }
            })
        } catch { quoted = .failure(error) }
        #expect(throws: BusError.self) { try quoted.get() }

        // Signals: a property map, then the bus going away is reported once.
        try await logind.send("active")
        try await logind.send("unlocked")
        #expect(await waitUntil(timeoutSeconds: 10) { seen.all.count == 2 })
        #expect(seen.all == [["Active": .bool(true)], ["LockedHint": .bool(false)]])
        await bus.stop()
        #expect(await waitUntil(timeoutSeconds: 10) { closed.withLock { $0 != nil } })
        let afterClose: Result<Void, BusError>
        do throws(BusError) { afterClose = .success(try await listener.perform { _ in }) } catch { afterClose = .failure(error) }
        #expect(throws: BusError.self) { try afterClose.get() }
        listener.close()
    }

    @Test func noBusIsAnErrorThatSaysWhere() async throws {
        let directory = try TemporaryDirectory("bus-listener")
        defer { directory.remove() }
        do throws(BusError) {
            _ = try await BusListener.open(.address("unix:path=\(directory.file("none"))"), label: "test-bus-listener",
                                           setup: { _ in }, onClose: { _ in })
            Issue.record("connected to a bus that does not exist")
        } catch {
            #expect(error.description.contains("connect to the bus at unix:path="), "\(error)")
        }
    }

    /// A "bus" that accepts the connection and never answers (a hung dbus-daemon): connecting
    /// gives up at the call timeout. sd-bus alone would wait out its 90 s authentication timeout
    /// in the first call, and hold a watcher (and a graceful stop) that long.
    @Test func aBusThatNeverAnswersTimesOutAtTheCallTimeout() throws {
        let directory = try TemporaryDirectory("bus-hung")
        defer { directory.remove() }
        let path = directory.file("hung")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() where index < buffer.count - 1 { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0 && listen(fd, 8) == 0)
        do throws(BusError) {
            _ = try BusConnection(.address("unix:path=\(path)"), callTimeoutSeconds: 1)
            Issue.record("a bus that never answered was taken as connected")
        } catch {
            #expect(error.description.contains("connect to the bus at unix:path="), "\(error)")
            #expect(error.description.contains("timed out"), "\(error)")
        }
    }
}
