import Foundation

/// The control protocol spoken on fetchd's Unix socket.
///
/// Framing: one JSON object per line (UTF-8, `\n`-terminated), at most `maxLineBytes`.
/// The client sends a `ControlRequest`; the daemon answers with one `ControlResponse` and the
/// connection may carry further requests. Every message carries `version`; a daemon answers a
/// request of a version it does not speak with the error `unsupported-version`. Fields are
/// only ever added within a version, so old clients ignore what they do not know.
public enum ControlProtocol {
    /// The protocol version this build speaks.
    public static let version = 1
    /// The longest request line accepted, in bytes.
    public static let maxLineBytes = 64 * 1024

    /// The encoder for every message: keys in snake_case (a property `lastResult` is the key
    /// `last_result`), ISO-8601 dates, sorted keys.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The decoder matching `encoder()`.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// Reads one request line (without its newline): the request, or the error to answer with.
    /// Everything a peer sends goes through here first (the fuzzer's `control` target too).
    public static func parse(_ line: Data) -> Result<ControlRequest, ControlError> {
        guard line.count <= maxLineBytes else {
            return .failure(ControlError(code: .badRequest, message: "request longer than \(maxLineBytes) bytes"))
        }
        if let probe = try? JSONSerialization.jsonObject(with: line) as? [String: Any],
           let asked = probe["version"] as? Int, asked != version {
            return .failure(ControlError(
                code: .unsupportedVersion,
                message: "protocol version \(asked) is not supported; this fetchd speaks version \(version)"))
        }
        do {
            return .success(try decoder().decode(ControlRequest.self, from: line))
        } catch {
            return .failure(ControlError(code: .badRequest, message: "not a valid request: \(error)"))
        }
    }
}

/// A request from a client.
public struct ControlRequest: Codable, Sendable, Equatable {
    /// What the client asks for.
    public enum Command: String, Codable, Sendable, CaseIterable {
        /// Liveness and version.
        case ping
        /// Every handler's state (`StatusReport`).
        case status
        /// Run a handler now (`FetchReport`).
        case fetch
        /// A handler's recent results (`[HistoryEntry]`).
        case history
        /// Look for due handlers now (what the wake timer's service sends).
        case wake
        /// Someone used a handler's content now (`UsedReport`): the planner learns from it.
        case used
        /// What was learned about a handler's usage (`UsageReport`).
        case usage
        /// A push wake (`PushReport`): fetch the handler now with `data`, within its `push_limit`.
        case push
        /// Re-read the configuration now and answer whether it was taken (`ReloadReport`): what
        /// `systemctl reload fetchd` runs, so that a rejected configuration fails the command.
        case reload
    }

    /// The protocol version the client speaks.
    public var version: Int
    /// The command.
    public var command: Command
    /// The handler, for `fetch`, `history`, `used`, `usage` and `push`.
    public var handler: String?
    /// For `fetch`: wait for the result instead of returning once it has started.
    public var wait: Bool?
    /// For `history`: how many entries.
    public var limit: Int?
    /// For `status`: reset the "new data since last look" counters (default true).
    public var markSeen: Bool?
    /// For `push`: the push's data, a JSON text (at most `Defaults.pushDataMaxBytes` bytes).
    public var data: String?

    /// Creates a request of the current version.
    public init(command: Command, handler: String? = nil, wait: Bool? = nil, limit: Int? = nil, markSeen: Bool? = nil,
                data: String? = nil) {
        self.version = ControlProtocol.version
        self.command = command
        self.handler = handler
        self.wait = wait
        self.limit = limit
        self.markSeen = markSeen
        self.data = data
    }
}

/// The daemon's answer to one request.
public struct ControlResponse: Codable, Sendable, Equatable {
    /// The protocol version of the answer.
    public var version: Int = ControlProtocol.version
    /// True when the request succeeded; otherwise `error` says why.
    public var ok: Bool
    /// The failure, when `ok` is false.
    public var error: ControlError?
    /// For `ping`.
    public var pong: PingReport?
    /// For `status`.
    public var status: StatusReport?
    /// For `fetch`.
    public var fetch: FetchReport?
    /// For `history`.
    public var history: [HistoryEntry]?
    /// For `used`.
    public var used: UsedReport?
    /// For `usage`.
    public var usage: UsageReport?
    /// For `push`.
    public var push: PushReport?
    /// For `reload`.
    public var reload: ReloadReport?

    /// A failed response.
    public static func failure(_ code: ControlError.Code, _ message: String) -> ControlResponse {
        ControlResponse(ok: false, error: ControlError(code: code, message: message))
    }

    /// The answer to a request that names a handler not loaded.
    public static func unknownHandler(_ name: String) -> ControlResponse {
        .failure(.unknownHandler, ControlError.notLoaded(name))
    }

    /// Creates a response.
    public init(ok: Bool = true, error: ControlError? = nil, pong: PingReport? = nil, status: StatusReport? = nil,
                fetch: FetchReport? = nil, history: [HistoryEntry]? = nil) {
        self.ok = ok
        self.error = error
        self.pong = pong
        self.status = status
        self.fetch = fetch
        self.history = history
    }
}

/// Why a request failed.
public struct ControlError: Codable, Sendable, Equatable, Error, CustomStringConvertible {
    /// Machine-readable failure kinds.
    public enum Code: String, Codable, Sendable {
        /// The request was not valid JSON or lacked a field.
        case badRequest = "bad-request"
        /// The request's protocol version is not spoken by this daemon.
        case unsupportedVersion = "unsupported-version"
        /// The peer is not allowed to use the socket.
        case unauthorized
        /// No such handler is loaded.
        case unknownHandler = "unknown-handler"
        /// The daemon is shutting down.
        case shuttingDown = "shutting-down"
        /// The daemon cannot start: its configuration has problems (the message lists them).
        case configInvalid = "config-invalid"
        /// Something failed inside the daemon.
        case internalError = "internal"
    }

    /// What to say when a request names `name` and no such handler is loaded.
    public static func notLoaded(_ name: String) -> String {
        "no handler named \"\(name)\" is loaded (see fetchctl status)"
    }

    /// The failure kind.
    public var code: Code
    /// What went wrong and what to do, for people.
    public var message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
