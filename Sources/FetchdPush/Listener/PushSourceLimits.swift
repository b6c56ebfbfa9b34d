import FetchdCore
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What one client of the push listener may cost across its connections and requests, by source
/// (`Source`: an IPv4 address, an IPv6 /64, or loopback as a whole): at most
/// `connectionsPerSource` connections at once (the listener's total is shared by everyone), and
/// at most `failuresPerWindow` pushes with a wrong or missing token per window, after which the
/// source is answered 429 until the window ends.
///
/// Loopback is locked out like any other source: any local user can reach a listener on
/// 127.0.0.1. Only the administrator's `trustedProxy` address (`push_trusted_proxy`) is never
/// locked out, since every client of a proxy shares its address and one of them would lock out
/// all; its connections are still capped. The table is bounded (`trackedMax`): sources with
/// nothing to remember go first, then the one seen longest ago; a locked-out source is never
/// forgotten, so it cannot clear its own lockout by flooding the table with new sources.
final class PushSourceLimits: Sendable {
    private struct Entry {
        var connections = 0
        var windowStart: ContinuousClock.Instant?
        var failures = 0
        var lastSeen: ContinuousClock.Instant
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
    /// The trusted proxy's whole address (`addressBytes`), never locked out; nil: none.
    let trustedProxy: [UInt8]?

    /// Limits as given (defaults: `Defaults.pushMaxConnectionsPerSource`, ...); `trustedProxy`
    /// is an IP address, or nil for none.
    init(connectionsPerSource: Int = Defaults.pushMaxConnectionsPerSource,
         failuresPerWindow: Int = Defaults.pushFailedTokensPerWindow,
         windowSeconds: Double = Defaults.pushFailedTokenWindowSeconds, trackedMax: Int = 4096,
         trustedProxy: SocketAddress? = nil) {
        self.connectionsPerSource = connectionsPerSource
        self.failuresPerWindow = failuresPerWindow
        window = .milliseconds(Int64(windowSeconds * 1000))
        self.trackedMax = trackedMax
        self.trustedProxy = trustedProxy.flatMap(Self.addressBytes)
    }

    /// Whether `peer` is the trusted proxy itself (the exact address, not its source): exempt
    /// from the wrong-token lockout.
    func isTrustedProxy(_ peer: SocketAddress?) -> Bool {
        guard let trustedProxy, let bytes = Self.addressBytes(peer) else { return false }
        return bytes == trustedProxy
    }

    /// Counts a new connection from `source`; false when it already holds its share, or when it
    /// is new and the table is full of sources that may not be forgotten (close it).
    func connectionOpened(from source: Source, now: ContinuousClock.Instant = .now) -> Bool {
        table.withLock { table in
            if table[source] == nil, !makeRoom(in: &table, now: now) { return false }
            var entry = table[source] ?? Entry(lastSeen: now)
            guard entry.connections < connectionsPerSource else { return false }
            entry.connections += 1
            entry.lastSeen = now
            table[source] = entry
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
    /// The caller exempts the trusted proxy (`isTrustedProxy`) before asking.
    func lockedOut(_ source: Source, now: ContinuousClock.Instant = .now) -> Duration? {
        table.withLock { table in table[source].flatMap { lockout(of: $0, now: now) } }
    }

    /// Counts a push from `source` with a wrong or missing token (the caller leaves out the
    /// trusted proxy's). A source the listener serves is in the table already (its connection
    /// holds its entry); one that is not, and finds it full of sources that may not be
    /// forgotten, is not counted.
    func recordFailure(from source: Source, now: ContinuousClock.Instant = .now) {
        table.withLock { table in
            if table[source] == nil, !makeRoom(in: &table, now: now) { return }
            var entry = table[source] ?? Entry(lastSeen: now)
            if entry.windowStart.map({ now - $0 >= window }) ?? true {
                entry.windowStart = now
                entry.failures = 0
            }
            entry.failures += 1
            entry.lastSeen = now
            table[source] = entry
        }
    }

    /// How many sources are remembered (tests).
    var trackedCount: Int { table.withLock { $0.count } }

    /// The rest of `entry`'s lockout at `now`, or nil when it is not locked out.
    private func lockout(of entry: Entry, now: ContinuousClock.Instant) -> Duration? {
        guard let start = entry.windowStart, entry.failures >= failuresPerWindow else { return nil }
        let left = start + window - now
        return left > .zero ? left : nil
    }

    /// Before a new source is added to a full table: forgets the sources with nothing to
    /// remember (no connection, no failure in the current window); then, for a flood of
    /// sources, the one seen longest ago that holds no connection and is not locked out. False
    /// when none may go: forgetting a locked-out source would reset its lockout, so the new
    /// source is refused instead until a window ends.
    private func makeRoom(in table: inout [Source: Entry], now: ContinuousClock.Instant) -> Bool {
        guard table.count >= trackedMax else { return true }
        table = table.filter { $0.value.connections > 0 || $0.value.windowStart.map { now - $0 < window } == true }
        guard table.count >= trackedMax else { return true }
        let evictable = table.filter { $0.value.connections == 0 && lockout(of: $0.value, now: now) == nil }
        guard let oldest = evictable.min(by: { $0.value.lastSeen < $1.value.lastSeen }) else { return false }
        table[oldest.key] = nil
        return true
    }
}
