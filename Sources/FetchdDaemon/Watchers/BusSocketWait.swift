import FetchdSystemd
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Waits, with inotify and no timer, for a bus's socket to appear: a machine without a system
/// bus (a container) keeps none, and retrying there with growing delays would wake the daemon
/// every minute for good, against its promise of no wake-ups while idle. A bus watcher that
/// opts in (`BusWatchLoop`'s `waitsForBusSocket`) retries once the socket's folder gets the socket;
/// where that cannot be watched (no inotify, no folder), it retries with delays as before.
final class BusSocketWait: Sendable {
    /// The default system bus socket, as sd-bus connects to it.
    static let systemSocket = "/run/dbus/system_bus_socket"

    private let inotify = Inotify()
    private let queue: DispatchQueue
    private let lock = NSLock()
    /// The running read source while it waits; guarded by `lock` (a dispatch source is not
    /// Sendable, so it cannot live in a Mutex).
    nonisolated(unsafe) private var source: (any DispatchSourceRead)?

    /// A waiter whose events arrive on a queue named `label`.
    init(label: String) { queue = DispatchQueue(label: label) }

    deinit { cancel() }

    /// The path of `bus`'s socket when its address is a plain unix path (the first address
    /// tried; `DBUS_SYSTEM_BUS_ADDRESS` for the system bus); nil otherwise (the user bus, an
    /// abstract socket, TCP).
    static func socketPath(of bus: BusConnection.Bus, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let address: String
        switch bus {
        case .system: address = environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=\(systemSocket)"
        case .address(let text): address = text
        case .user: return nil
        }
        let first = address.prefix { $0 != ";" }
        guard first.hasPrefix("unix:") else { return nil }
        for pair in first.dropFirst("unix:".count).split(separator: ",") where pair.hasPrefix("path=") {
            let path = String(pair.dropFirst("path=".count))
            // Escaped bytes (%xx) are rare in socket paths; such a path is not waited for.
            return path.contains("%") || path.isEmpty ? nil : path
        }
        return nil
    }

    /// When `bus` has a socket path and nothing is there, starts watching its folder and calls
    /// `appeared` once, on this waiter's queue, when the socket is there. Returns whether it
    /// waits: false when the socket exists (retry as usual) or its folder cannot be watched.
    func start(for bus: BusConnection.Bus, _ appeared: @escaping @Sendable () -> Void) -> Bool {
        guard inotify.problem == nil, let path = Self.socketPath(of: bus) else { return false }
        cancel()
        let folder = (path as NSString).deletingLastPathComponent
        guard inotify.add(folder, mask: UInt32(IN_CREATE | IN_MOVED_TO)) >= 0 else { return false }
        // Watched first, then looked at: a socket made in between is seen either way.
        guard access(path, F_OK) != 0 else { return false }
        let reader = inotify.readSource(on: queue) { [self] in
            inotify.drain { _ in }
            guard access(path, F_OK) == 0 else { return }
            cancel()
            appeared()
        }
        lock.withLock { source = reader }
        return true
    }

    /// Stops waiting, if it does.
    func cancel() {
        lock.withLock {
            source?.cancel()
            source = nil
        }
    }
}
