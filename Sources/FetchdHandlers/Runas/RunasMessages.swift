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
    /// The latest snapshot's path (`FETCHD_PREVIOUS`), when there is one.
    public var previous: String?
    /// A push wake's JSON data (`FETCHD_PUSH_DATA`).
    public var pushData: String?
    /// For `on_complete`: the published file, in the handler's cache folder.
    public var snapshot: String?

    /// The version this build speaks.
    public static let currentVersion = 1
    /// The most bytes a request may take (a push's data is far smaller).
    public static let maxBytes = 64 * 1024
    /// Every field a request may have.
    public static let fields: Set<String> = ["version", "handler", "program", "trigger", "seconds", "wallDeadline",
                                             "previous", "pushData", "snapshot"]

    /// Creates a request.
    public init(handler: String, program: Program, trigger: FetchTrigger, seconds: Double, wallDeadline: Int) {
        self.handler = handler
        self.program = program
        self.trigger = trigger
        self.seconds = seconds
        self.wallDeadline = wallDeadline
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
