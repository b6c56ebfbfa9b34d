import CSystemdShim
import Foundation

/// A connection to the systemd manager over D-Bus (sd-bus), owned by this object and closed in
/// `deinit`. fetchd uses it for one thing: starting and stopping the instance of the shipped
/// `fetchd-planned@.timer` at its next planned fetch, so the wake happens on a systemd timer
/// (visible in `systemctl list-timers`, coalesced with the system's other timers) rather than
/// only on fetchd's own clock.
public final class ManagerBus {
    /// Why the manager could not be reached or refused a request.
    public struct Failure: Error, CustomStringConvertible {
        /// What was attempted.
        public let operation: String
        /// The manager's or the library's explanation.
        public let reason: String
        /// The errno the call failed with (EACCES: the manager or polkit refused this caller).
        public var code: Int32 = 0
        /// The caller may not do this at all (access denied): asking again will not help.
        public var isRefusal: Bool { code == EACCES || code == EPERM }
        /// No such unit is installed: asking again will not help either.
        public var isMissingUnit: Bool { code == ENOENT }
        /// `operation: reason`.
        public var description: String { "\(operation): \(reason)" }
    }

    private let bus: OpaquePointer

    /// Connects to the user manager (`user`) or the system manager; a call that takes longer
    /// than `callTimeoutSeconds` fails. The connection is authenticated before this returns: a
    /// bus daemon drops a connection that has not finished authenticating within its
    /// `auth_timeout` (30 s for dbus-daemon), which a lazily started one idle that long never does.
    public init(user: Bool, callTimeoutSeconds: Double) throws(Failure) {
        var bus: OpaquePointer?
        let result = fetchd_bus_open_with_timeout(user ? 1 : 0, UInt64(callTimeoutSeconds * 1_000_000), &bus)
        guard result >= 0, let bus else {
            throw Failure(operation: "connect to the \(user ? "user" : "system") bus",
                          reason: String(cString: strerror(-result)))
        }
        self.bus = bus
    }

    deinit { sd_bus_flush_close_unref(bus) }

    /// Whether the connection is still up (the bus daemon has not dropped it).
    public var isOpen: Bool { sd_bus_is_open(bus) > 0 }

    /// Starts `unitName` (a job "replace"); `Failure.isMissingUnit` when it is not installed.
    public func startUnit(_ unitName: String) throws(Failure) {
        var error = [CChar](repeating: 0, count: 512)
        let result = fetchd_bus_start_unit(bus, unitName, &error, error.count)
        guard result >= 0 else { throw Self.failure("start \(unitName)", result: result, error: error) }
    }

    /// Stops `unitName` (an unknown unit is not an error). The manager answers once the stop
    /// job is queued.
    public func stopUnit(_ unitName: String) throws(Failure) {
        var error = [CChar](repeating: 0, count: 512)
        let result = fetchd_bus_stop_unit(bus, unitName, &error, error.count)
        guard result >= 0 else { throw Self.failure("stop \(unitName)", result: result, error: error) }
    }

    /// A shim call's failure: its negative errno `result` and the text it copied into `error`.
    private static func failure(_ operation: String, result: Int32, error: [CChar]) -> Failure {
        var failure = Failure(operation: operation,
                              reason: String(decoding: error.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        failure.code = -result
        return failure
    }
}
