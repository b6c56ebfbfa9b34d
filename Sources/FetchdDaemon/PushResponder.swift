import FetchdControl
import FetchdCore
import Foundation
import Hummingbird
import Logging
import NIOCore

/// Answers the push listener's requests: `POST /push/NAME` with `Authorization: Bearer TOKEN`
/// (the handler's `push_token_file`) and, as the body, the push data (JSON, at most
/// `Defaults.pushDataMaxBytes` bytes; empty for none).
///
/// 202: taken (fetching now, or coalesced: the body's `fetch_at` says when); 400: the body is
/// not JSON; 401: no or wrong token; 404: no such handler, or one without a token; 405: not
/// POST; 413: the body is too large; 503: the state database failed. Every refusal closes the
/// connection (`PushConnectionGuard`), so the rest of a refused body is never read.
struct PushResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    /// Where accepted pushes go.
    let intake: PushIntake
    /// Where the handlers' tokens are looked up (per request, so a reload's tokens count at once).
    let coordinator: FetchCoordinator
    /// The largest body (push data) read.
    let dataMaxBytes: Int
    /// The daemon's logger.
    let logger: Logger

    /// The path prefix of push requests; the handler's name follows.
    static let pathPrefix = "/push/"

    /// Routes, checks the token and size, and hands the push to the intake.
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
        // A handler without a token takes no pushes from the network: as if it did not exist here.
        guard let token = await coordinator.pushToken(of: name), let expected = token else {
            return Self.refusal(.notFound, "no handler \"\(name)\" takes pushes here (it needs push_token_file)")
        }
        guard let presented = Self.bearerToken(request.headers[.authorization]), Self.tokensMatch(presented, expected) else {
            logger.info("push listener: refused a push for \(name): missing or wrong token", metadata: ["handler": "\(name)"])
            var response = Self.refusal(.unauthorized, "missing or wrong token: send Authorization: Bearer TOKEN (the handler's push_token_file)")
            response.headers[.wwwAuthenticate] = "Bearer realm=\"fetchd\""
            return response
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
            let report = try await intake.push(name, data: Array(buffer: body))
            return Self.json(.accepted, report, close: false)
        } catch {
            switch error {
            case .badData: return Self.refusal(.badRequest, error.description)
            case .unknownHandler: return Self.refusal(.notFound, error.description)
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
