import FetchdCore
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What one client of the push listener may cost across its connections and requests, by source
/// address: at most `connectionsPerSource` connections at once (the listener's total is shared
/// by everyone), and at most `failuresPerWindow` pushes with a wrong or missing token per window,
/// after which the source is answered 429 until the window ends.
///
/// A source is an IPv4 address or an IPv6 /64, the block one host usually holds (a client that
/// rotates addresses inside its /64 is still one source). Behind a local proxy (the way to put
/// TLS in front) every client is the proxy, so a loopback source is never locked out for wrong
/// tokens, which would lock every client out; its connections are still capped, and the
/// proxy's own limits count per client. The table is bounded (`trackedMax`): sources
/// with no connection and no failure in the current window are forgotten first.
final class PushSourceLimits: Sendable {
    /// A client, as counted.
    struct Source: Hashable, Sendable, CustomStringConvertible {
        /// 4 bytes (IPv4, mapped addresses included) or the first 8 of an IPv6 address.
        let bytes: [UInt8]

        /// The source of a peer address; nil for a UNIX socket.
        init?(_ address: SocketAddress?) {
            switch address {
            case .v4(let v4):
                bytes = withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
            case .v6(let v6):
                let all = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
                let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
                bytes = Array(all[0..<12]) == mapped ? Array(all[12..<16]) : Array(all[0..<8])
            default:
                return nil
            }
        }

        /// A loopback address (127/8, or ::1's /64): a local proxy in front of the listener.
        var isLoopback: Bool { bytes.count == 4 ? bytes[0] == 127 : bytes.allSatisfy { $0 == 0 } }

        /// `192.0.2.1` or `2001:db8:1:2::/64`.
        var description: String {
            if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "::/64"
        }
    }

    private struct Entry {
        var connections = 0
        var windowStart: ContinuousClock.Instant?
        var failures = 0
    }

    private let table = Mutex([Source: Entry]())
    /// Connections one source may hold at once.
    let connectionsPerSource: Int
    /// Failed tokens one source may present per window.
    let failuresPerWindow: Int
    /// The window.
    let window: Duration
    /// The most sources remembered.
    let trackedMax: Int
    /// Whether loopback sources are locked out too (`PushListener.Limits.lockOutLoopback`).
    let lockOutLoopback: Bool

    /// Limits as given (defaults: `Defaults.pushMaxConnectionsPerSource`, ...).
    init(connectionsPerSource: Int = Defaults.pushMaxConnectionsPerSource,
         failuresPerWindow: Int = Defaults.pushFailedTokensPerWindow,
         windowSeconds: Double = Defaults.pushFailedTokenWindowSeconds, trackedMax: Int = 4096,
         lockOutLoopback: Bool = false) {
        self.connectionsPerSource = connectionsPerSource
        self.failuresPerWindow = failuresPerWindow
        window = .milliseconds(Int64(windowSeconds * 1000))
        self.trackedMax = trackedMax
        self.lockOutLoopback = lockOutLoopback
    }

    /// Counts a new connection from `source`; false when it already holds its share (close it).
    func connectionOpened(from source: Source, now: ContinuousClock.Instant = .now) -> Bool {
        table.withLock { table in
            if table[source] == nil { makeRoom(in: &table, now: now) }
            guard table[source, default: Entry()].connections < connectionsPerSource else { return false }
            table[source, default: Entry()].connections += 1
            return true
        }
    }

    /// Counts a connection of `source` as closed.
    func connectionClosed(from source: Source) {
        table.withLock { table in
            guard var entry = table[source] else { return }
            entry.connections = max(0, entry.connections - 1)
            table[source] = entry.connections == 0 && entry.failures == 0 ? nil : entry
        }
    }

    /// How long `source` must wait before its next push is looked at, or nil when it need not.
    func lockedOut(_ source: Source, now: ContinuousClock.Instant = .now) -> Duration? {
        guard lockOutLoopback || !source.isLoopback else { return nil }
        return table.withLock { table in
            guard let entry = table[source], let start = entry.windowStart, entry.failures >= failuresPerWindow else { return nil }
            let left = start + window - now
            return left > .zero ? left : nil
        }
    }

    /// Counts a push from `source` with a wrong or missing token.
    func recordFailure(from source: Source, now: ContinuousClock.Instant = .now) {
        guard lockOutLoopback || !source.isLoopback else { return }
        table.withLock { table in
            if table[source] == nil { makeRoom(in: &table, now: now) }
            var entry = table[source, default: Entry()]
            if entry.windowStart.map({ now - $0 >= window }) ?? true {
                entry.windowStart = now
                entry.failures = 0
            }
            entry.failures += 1
            table[source] = entry
        }
    }

    /// How many sources are remembered (tests).
    var trackedCount: Int { table.withLock { $0.count } }

    /// Before a new source is added to a full table: forgets the idle ones, then (a flood of
    /// sources) any without a connection.
    private func makeRoom(in table: inout [Source: Entry], now: ContinuousClock.Instant) {
        guard table.count >= trackedMax else { return }
        table = table.filter { $0.value.connections > 0 || $0.value.windowStart.map { now - $0 < window } == true }
        if table.count >= trackedMax {
            table = table.filter { $0.value.connections > 0 }
        }
    }
}
