import FetchdSystemd
import Logging

/// A bus connection that a bus watcher's loop (`BusWatchLoop`) keeps while some handler wants
/// it: opened when wanted, unless one is open or a retry waits; left when no longer wanted;
/// after an attempt fails or the connection closes, reopened with growing delays
/// (`BusReconnect`), the first failure of an outage logged as the watcher words it and the
/// retries at debug level.
struct BusLink {
    /// The open connection, if any.
    private(set) var listener: BusListener?
    private var reconnect = BusReconnect()
    /// Whether the current outage was logged.
    private var inOutage = false

    /// Whether to try to connect now: none is open and no retry waits.
    var mayConnect: Bool { listener == nil && !reconnect.pending }

    /// Opens `bus` with what `setup` installs on it. Returns whether this ends an outage (the
    /// watcher may say it is connected again).
    mutating func open(_ bus: BusConnection.Bus, label: String,
                       setup: @escaping @Sendable (BusConnection) throws(BusError) -> Void,
                       onClose: @escaping @Sendable (BusError) -> Void) async throws(BusError) -> Bool {
        listener = try await BusListener.open(bus, label: label, setup: setup, onClose: onClose)
        reconnect.connected()
        defer { inOutage = false }
        return inOutage
    }

    /// Leaves the bus and forgets the outage and any waiting retry. Returns whether a
    /// connection was open.
    mutating func leave() -> Bool {
        let wasOpen = listener != nil
        listener?.close()
        self = BusLink()
        return wasOpen
    }

    /// The connection closed by itself.
    mutating func lost() { listener = nil }

    /// The retry scheduled by `failed` is due.
    mutating func retryDue() { reconnect.pending = false }

    /// An attempt failed or the connection closed: `firstLog` logs the first failure of an
    /// outage, later ones go to debug level under `prefix`; a retry follows after the next delay,
    /// as a child task of `group`.
    mutating func failed(_ problem: String, logger: Logger, prefix: String, firstLog: (String) -> Void,
                         in group: inout DiscardingTaskGroup, retry: @escaping @Sendable () -> Void) {
        note(problem, logger: logger, prefix: prefix, firstLog: firstLog)
        reconnect.schedule(in: &group, retry)
    }

    /// An attempt failed because the bus's socket is not there, and the caller waits for it to
    /// appear (`BusSocketWait`, which calls `retryDue` through the loop): logged as `failed`
    /// logs, with no timer.
    mutating func waitingForSocket(_ problem: String, logger: Logger, prefix: String, firstLog: (String) -> Void) {
        note(problem, logger: logger, prefix: prefix, firstLog: firstLog)
        reconnect.pending = true
    }

    /// Logs the first failure of an outage with `firstLog`, later ones at debug level.
    private mutating func note(_ problem: String, logger: Logger, prefix: String, firstLog: (String) -> Void) {
        if inOutage {
            logger.debug("\(prefix): \(problem)")
        } else {
            firstLog(problem)
            inOutage = true
        }
    }
}
