import FetchdControl
import FetchdCore
import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// Answers the push listener's requests: `POST /push/NAME` with `Authorization: Bearer TOKEN`
/// (the handler's `push_token_file`) and, as the body, the push data (JSON, at most
/// `Defaults.pushDataMaxBytes` bytes; empty for none).
///
/// 202: taken (fetching now, or coalesced: the body's `fetch_at` says when); 400: the body is
/// not JSON; 401: no or wrong token, and alike for a handler that does not exist or takes no
/// pushes, so that a client without a token learns nothing of which handlers do; 404: a path
/// outside `/push/`; 405: not POST; 413: the body is too large; 503: the state database
/// failed; 429: this source sent too many wrong tokens lately (`Retry-After` says when to come
/// back; `PushSourceLimits`; never the trusted proxy). Every refusal closes the connection
/// (`PushConnectionGuard`), so the rest of a refused body is never read; refusals are logged at
/// most once per `refusalLogIntervalSeconds`, with how many were not, so a flood cannot trip
/// journald's rate limit and hide fetchd's own lines.
struct PushResponder: HTTPResponder {
    typealias Context = PushRequestContext

    /// Where the handlers' tokens are looked up and accepted pushes go.
    let sink: any PushSink
    /// The largest body (push data) read.
    let dataMaxBytes: Int
    /// Failed tokens per source address.
    let sources: PushSourceLimits
    /// The daemon's logger.
    let logger: Logger
    /// Refusals not yet logged, and when the last line was (shared by every request).
    let refusalLog = RefusalLog()

    /// The least time between two refusal lines in the log, in seconds.
    static let refusalLogIntervalSeconds = 10.0

    /// What a push for a handler without a token is compared with, so that it takes the time a
    /// wrong token does: as long as the shortest token accepted (32 hexadecimal digits).
    static let placeholderToken = String(repeating: " ", count: Defaults.pushTokenMinBits / 4)

    /// The path prefix of push requests; the handler's name follows.
    static let pathPrefix = "/push/"

    /// Routes, checks the token and size, and hands the push to the sink.
    func respond(to request: Request, context: Context) async throws -> Response {
        let path = request.uri.path
        guard path.hasPrefix(Self.pathPrefix), !path.dropFirst(Self.pathPrefix.count).contains("/") else {
            return Self.refusal(.notFound, "not found: pushes go to POST \(Self.pathPrefix)NAME")
        }
        let name = String(path.dropFirst(Self.pathPrefix.count))
        guard request.method == .post else {
            var response = Self.refusal(.methodNotAllowed, "\(request.method) is not allowed: send POST \(path)")
            response.headers[.allow] = "POST"
            return response
        }
        // The trusted proxy is never locked out: every client behind it shares its address.
        let exempt = sources.isTrustedProxy(context.peer)
        if !exempt, let source = context.source, let wait = sources.lockedOut(source) {
            var response = Self.refusal(.tooManyRequests, "too many pushes with a wrong token from \(source): try again later")
            response.headers[.retryAfter] = String(wait.components.seconds + 1)
            return response
        }
        // No such handler, or one without a token (it takes no pushes from the network): answered
        // as a wrong token is, after the same comparison, so neither the status nor the time tells.
        let expected = await sink.pushToken(of: name)
        let presented = Self.bearerToken(request.headers[.authorization])
        guard let expected, let presented, Self.tokensMatch(presented, expected) else {
            _ = Self.tokensMatch(presented ?? "", expected ?? Self.placeholderToken)
            if !exempt, let source = context.source { sources.recordFailure(from: source) }
            if let suppressed = refusalLog.shouldLog(intervalSeconds: Self.refusalLogIntervalSeconds) {
                let more = suppressed > 0 ? " (and \(suppressed) more refusal(s) since the last line)" : ""
                logger.info("push listener: refused a push for \(name): no such handler, no token or a wrong one\(more)",
                            metadata: ["handler": "\(name)"])
            }
            return Self.unauthorized()
        }
        let tooLarge = "the push data is over \(dataMaxBytes) bytes; send a smaller JSON text (e.g. an id or URL to fetch)"
        if let length = request.headers[.contentLength].flatMap(Int.init), length > dataMaxBytes {
            return Self.refusal(.contentTooLarge, tooLarge)
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: dataMaxBytes)
        } catch is NIOTooManyBytesError {
            return Self.refusal(.contentTooLarge, tooLarge)
        }
        do {
            let report = try await sink.push(name, data: Array(buffer: body))
            return Self.json(.accepted, report, close: false)
        } catch {
            switch error {
            case .badData: return Self.refusal(.badRequest, error.description)
            case .unknownHandler: return Self.unauthorized()  // removed by a reload meanwhile
            case .stateUnavailable, .shuttingDown: return Self.refusal(.serviceUnavailable, error.description)
            }
        }
    }

    /// The token of an `Authorization: Bearer TOKEN` header (the scheme is case-insensitive).
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    /// Compares in time that depends only on the expected token's length, never on where the
    /// first difference is, so a client cannot find the token byte by byte by timing answers.
    static func tokensMatch(_ presented: String, _ expected: String) -> Bool {
        let given = Array(presented.utf8), wanted = Array(expected.utf8)
        var difference: UInt8 = given.count == wanted.count ? 0 : 1
        for index in wanted.indices {
            difference |= wanted[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }

    /// The one answer to a push without the right token, whatever the handler.
    static func unauthorized() -> Response {
        var response = refusal(.unauthorized, "missing or wrong token: send Authorization: Bearer TOKEN (the handler's push_token_file)")
        response.headers[.wwwAuthenticate] = "Bearer realm=\"fetchd\""
        return response
    }

    /// A refusal: `{"error": message}` and the connection closed after it.
    static func refusal(_ status: HTTPResponse.Status, _ message: String) -> Response {
        json(status, ["error": message], close: true)
    }

    private static func json(_ status: HTTPResponse.Status, _ value: some Encodable, close: Bool) -> Response {
        let data = (try? ControlProtocol.encoder().encode(value)) ?? Data("{}".utf8)
        var headers: HTTPFields = [.contentType: "application/json"]
        if close { headers[.connection] = "close" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data + Data("\n".utf8))))
    }
}

/// A push request's context: Hummingbird's, plus the source address it came from.
struct PushRequestContext: RequestContext {
    /// Hummingbird's per-request storage.
    var coreContext: CoreRequestContextStorage
    /// The client's address (the trusted proxy is recognised by it).
    let peer: SocketAddress?
    /// The client's source, as `PushSourceLimits` counts it; nil for a UNIX socket.
    let source: PushSourceLimits.Source?

    /// The context of a request on `source.channel`.
    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        let address = source.channel.remoteAddress
        peer = address
        self.source = PushSourceLimits.Source(address)
    }
}

/// How many push refusals went unlogged, so the log says one line per interval at most.
final class RefusalLog: Sendable {
    private struct State {
        var lastLogged: ContinuousClock.Instant?
        var suppressed = 0
    }
    private let state = Mutex(State())

    /// Nil when this refusal is only counted; else log it, with how many were counted since the
    /// last line (the count starts again).
    func shouldLog(intervalSeconds: Double, now: ContinuousClock.Instant = .now) -> Int? {
        state.withLock { state in
            if let last = state.lastLogged, last.duration(to: now) < .milliseconds(Int64(intervalSeconds * 1000)) {
                state.suppressed += 1
                return nil
            }
            defer { state.suppressed = 0 }
            state.lastLogged = now
            return state.suppressed
        }
    }
}
