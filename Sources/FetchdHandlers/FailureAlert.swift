import FetchdCore
import Foundation

/// What a failure alert tells its program (`on_failure`), in its environment: which event,
/// the result that caused it, why, how many failures in a row, and when the handler last
/// succeeded before them. The same data goes to fetchd-runas as request fields, checked there
/// (`problem`).
public struct FailureAlert: Sendable, Equatable {
    /// Which alert.
    public enum Event: String, Codable, Sendable {
        /// The handler failed `alert_after` times in a row.
        case failing
        /// It succeeded again after such a streak.
        case recovered
    }

    /// Which alert.
    public var event: Event
    /// The result that raised it: `failed` or `expired` when failing, `newData` or `noData` when recovered.
    public var result: String
    /// Why the last fetch failed (failing only).
    public var reason: String?
    /// The failures in a row: so far (failing), or the streak that just ended (recovered).
    public var failures: Int
    /// The last success before the streak, as Unix seconds; nil: never.
    public var lastSuccess: Int?

    /// Creates an alert's data.
    public init(event: Event, result: String, reason: String?, failures: Int, lastSuccess: Int?) {
        self.event = event
        self.result = result
        self.reason = reason
        self.failures = failures
        self.lastSuccess = lastSuccess
    }

    /// The longest reason passed on, in bytes (the fetch's own reason ends in its output tail).
    public static let maxReasonBytes = 4096

    /// The variables the alert program gets besides those of every program (`FETCHD_HANDLER`,
    /// `FETCHD_TRIGGER`, `FETCHD_DEADLINE`): fetchd-handlers(7).
    public var environment: [String: String] {
        [
            "FETCHD_ALERT": event.rawValue, "FETCHD_RESULT": result, "FETCHD_REASON": reason ?? "",
            "FETCHD_FAILURES": String(failures), "FETCHD_LAST_SUCCESS": lastSuccess.map(String.init) ?? "",
        ]
    }

    /// Why these fields are not an alert fetchd could send, or nil: a result word of the event,
    /// a positive count, a time not before 1970, a reason without NUL within `maxReasonBytes`.
    public var problem: String? {
        let results = event == .failing ? ["failed", "expired"] : ["newData", "noData"]
        guard results.contains(result) else {
            return "`result` \"\(result)\" is not one of \(results.joined(separator: ", ")) (for a \(event.rawValue) alert)"
        }
        guard failures >= 1 else { return "`failures` (\(failures)) is not a positive count" }
        if let lastSuccess, lastSuccess < 0 { return "`lastSuccess` (\(lastSuccess)) is before 1970" }
        if let reason, reason.utf8.count > Self.maxReasonBytes || reason.utf8.contains(0) {
            return "`reason` is over \(Self.maxReasonBytes) bytes or holds a NUL"
        }
        return nil
    }

    /// `text` cut to at most `maxReasonBytes` bytes at a character boundary, NULs dropped.
    public static func reasonText(_ text: String) -> String {
        var kept = ""
        for character in text where character != "\0" {
            guard kept.utf8.count + character.utf8.count <= maxReasonBytes else { break }
            kept.append(character)
        }
        return kept
    }
}

extension ExecHandler {
    /// Makes this program one that runs beside its handler's fetches and writes no snapshot: a
    /// transfer's `on_complete` (the published file in `FETCHD_SNAPSHOT`) or a failure alert's
    /// `on_failure` (`alert`'s environment). The one setup fetchd and fetchd-runas both use.
    public mutating func runsBeside(snapshot: String?, alert: FailureAlert?) {
        if let snapshot { environment["FETCHD_SNAPSHOT"] = snapshot }
        if let alert { environment.merge(alert.environment) { _, alert in alert } }
        writesSnapshot = false
    }
}
