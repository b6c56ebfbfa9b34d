import FetchdCore
import Foundation

/// What fetchd asks of fetchd-runas, the privileged part that starts handler programs as other
/// users: one request per connection, one JSON object in one SOCK_SEQPACKET message.
///
/// It names a handler and which of its programs to run, never a program, an argument or a user:
/// fetchd-runas takes those from the root-owned configuration, so a fetchd taken over can at
/// most ask for what the administrator configured. The rest is data for the program's
/// environment. fetchd-runas refuses a request with any other field (fetchd-runas(8)).
public struct RunasRequest: Codable, Sendable, Equatable {
    /// Which program of the handler.
    public enum Program: String, Codable, Sendable {
        /// An exec handler's `command`.
        case command
        /// A transfer's `on_complete`, given the published file (`snapshot`).
        case onComplete = "on_complete"
        /// The handler's failure alert (its `on_failure`, else the main file's), given the
        /// alert's data (`alert`, `result`, `reason`, `failures`, `lastSuccess`).
        case onFailure = "on_failure"
    }

    /// The protocol's version; fetchd-runas refuses another.
    public var version = RunasRequest.currentVersion
    /// The handler's name, as in its handler file.
    public var handler: String
    /// Which of its programs.
    public var program: Program
    /// Why it runs (`FETCHD_TRIGGER`).
    public var trigger: FetchTrigger
    /// Seconds the program has (fetchd-runas holds it to the handler's own `deadline`).
    public var seconds: Double
    /// The deadline as Unix time (`FETCHD_DEADLINE`).
    public var wallDeadline: Int
    /// A push wake's JSON data (`FETCHD_PUSH_DATA`).
    public var pushData: String?
    /// For `on_complete`: the published file, which fetchd-runas holds to the handler's newest
    /// (`FETCHD_PREVIOUS` is never taken from fetchd: fetchd-runas copies the newest itself).
    public var snapshot: String?
    /// For `on_failure`: which alert (`FETCHD_ALERT`).
    public var alert: FailureAlert.Event?
    /// For `on_failure`: the result that raised it (`FETCHD_RESULT`).
    public var result: String?
    /// For `on_failure`: why the last fetch failed (`FETCHD_REASON`).
    public var reason: String?
    /// For `on_failure`: the failures in a row (`FETCHD_FAILURES`).
    public var failures: Int?
    /// For `on_failure`: the last success before them, Unix seconds (`FETCHD_LAST_SUCCESS`).
    public var lastSuccess: Int?

    /// The version this build speaks.
    public static let currentVersion = 1
    /// The most bytes a request may take (a push's data is far smaller).
    public static let maxBytes = 64 * 1024
    /// Every field a request may have: the keys it is coded with.
    public static let fields = Set(CodingKeys.allCases.map(\.rawValue))

    /// The request's fields, as JSON names them; `fields` is read from here, so the check of
    /// unknown fields and the coding cannot disagree.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case version, handler, program, trigger, seconds, wallDeadline, pushData, snapshot
        case alert, result, reason, failures, lastSuccess
    }

    /// Creates a request.
    public init(handler: String, program: Program, trigger: FetchTrigger, seconds: Double, wallDeadline: Int) {
        self.handler = handler
        self.program = program
        self.trigger = trigger
        self.seconds = seconds
        self.wallDeadline = wallDeadline
    }
}

extension RunasRequest {
    /// The alert's data the request carries, nil when it carries none (every field but
    /// `reason` and `lastSuccess` is needed).
    public var failureAlert: FailureAlert? {
        get {
            guard let alert, let result, let failures else { return nil }
            return FailureAlert(event: alert, result: result, reason: reason, failures: failures, lastSuccess: lastSuccess)
        }
        set {
            (alert, result, reason) = (newValue?.event, newValue?.result, newValue?.reason)
            (failures, lastSuccess) = (newValue?.failures, newValue?.lastSuccess)
        }
    }

    /// Whether the request holds any of the alert's fields.
    public var hasAlertFields: Bool {
        alert != nil || result != nil || reason != nil || failures != nil || lastSuccess != nil
    }
}

/// fetchd's other message on a request's connection: stop the program now (its deadline passed
/// on fetchd's side, or fetchd is stopping). Closing the connection does the same.
public struct RunasStop: Codable, Sendable, Equatable {
    /// Always true.
    public var stop = true

    /// Creates the message.
    public init() {}
}

/// fetchd-runas's answer: how the program ended, as the result contract counts it. With
/// `newData`, the program's output comes with it as an open descriptor (SCM_RIGHTS), checked by
/// fetchd-runas (a regular file of the program's user, within `max_bytes`) and `outputBytes` long.
public struct RunasReply: Codable, Sendable, Equatable {
    /// How it ended.
    public enum Result: String, Codable, Sendable {
        /// Exit 0 with output (or exit 0 for `on_complete`).
        case newData
        /// Exit 100.
        case noData
        /// Anything else, `reason` says what.
        case failed
        /// Stopped at its deadline.
        case expired
        /// Not run: the request was refused (`reason` says why).
        case refused
    }

    /// How it ended.
    public var result: Result
    /// Why it failed or was refused.
    public var reason: String?
    /// The size of the output passed with the reply.
    public var outputBytes: Int?

    /// Creates a reply.
    public init(result: Result, reason: String? = nil, outputBytes: Int? = nil) {
        self.result = result
        self.reason = reason
        self.outputBytes = outputBytes
    }

    /// The most bytes a reply may take (a failure reason carries the program's output tail).
    public static let maxBytes = 64 * 1024
}
