import CSystemdShim
import Foundation

/// A connection to the systemd manager over D-Bus (sd-bus), owned by this object and closed in
/// `deinit`. fetchd uses it for one thing: a transient timer at its next planned fetch, so the
/// wake happens on a systemd timer (visible in `systemctl list-timers`, coalesced with the
/// system's other timers, caught up after suspend) rather than only on fetchd's own clock.
public final class ManagerBus {
    /// Why the manager could not be reached or refused a request.
    public struct Failure: Error, CustomStringConvertible {
        /// What was attempted.
        public let operation: String
        /// The manager's or the library's explanation.
        public let reason: String
        /// The errno the call failed with (EACCES: the manager or polkit refused this caller).
        public var code: Int32 = 0
        /// A unit of that name is still loaded (the one just stopped, not yet unloaded by the
        /// manager): the same request is likely to succeed a moment later.
        public var unitStillLoaded: Bool { code == EEXIST }
        /// The caller may not do this at all (access denied): asking again will not help.
        public var isRefusal: Bool { code == EACCES || code == EPERM }
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

    /// Starts the transient `timerName` that fires once at `date` and activates the service of
    /// the same name (`x.timer` starts `x.service`). A previous timer of that name must have been
    /// stopped (`stopUnit`) and unloaded: `Failure.unitStillLoaded` says it was not yet.
    public func startTimer(_ timerName: String, at date: Date,
                           accuracy: Duration, description: String) throws(Failure) {
        var error = [CChar](repeating: 0, count: 512)
        let accuracyMicroseconds = UInt64(accuracy.components.seconds) * 1_000_000
            + UInt64(accuracy.components.attoseconds / 1_000_000_000_000)
        let result = fetchd_bus_start_transient_timer(
            bus, timerName, description, Self.calendarSpec(date), accuracyMicroseconds,
            &error, error.count)
        guard result >= 0 else { throw Self.failure("start \(timerName)", result: result, error: error) }
    }

    /// Stops `unitName` (an unknown unit is not an error). The manager answers once the stop
    /// job is queued; a transient unit is unloaded a little later.
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

    /// A systemd calendar spec for one moment, in UTC: `2026-11-21 08:50:00 UTC`. Rounded up to
    /// the second: a timer that fires a fraction early would find nothing due yet.
    static func calendarSpec(_ date: Date) -> String {
        let date = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.up))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss 'UTC'"
        return formatter.string(from: date)
    }
}
