import CurlKit
import FetchdCore
import Foundation

/// Fetches a URL with libcurl; the response body becomes the snapshot.
///
/// 2xx is `newData` (the daemon turns byte-identical content into `noData`); 304 is `noData`
/// when the request was conditional; any other status is `failed` with the code. The transfer's time limit is the fetch's
/// remaining deadline, and the body may not exceed `maxBytes`.
public struct HTTPHandler: FetchHandler {
    /// The URL to GET.
    public let url: String
    /// The largest body accepted, in bytes.
    public let maxBytes: Int
    /// Whether `file://` is allowed (local use and tests).
    public let allowFileURLs: Bool
    /// The User-Agent header.
    public var userAgent = "fetchd/\(Defaults.version)"
    /// Extra request headers.
    public var headers: [String: String] = [:]
    /// The Accept-Encoding offered ("" = everything libcurl decodes).
    public var acceptEncoding = ""
    /// A proxy URL (nil: libcurl's environment handling).
    public var proxy: String?
    /// CA certificates to trust instead of the system's.
    public var caFile: String?
    /// Whether every connection must go to a global address (`HTTPRequest.globalAddressesOnly`).
    public var globalAddressesOnly = false
    /// The client whose multi handle runs the transfer (the daemon's, with its limits).
    public var client: HTTPClient
    /// How long after the deadline libcurl's own time limit ends the transfer: a backstop only.
    /// The runner's expiry at the deadline ends it first (through the context's expiration
    /// callback), so the result is `expired`, never sometimes `failed: timeout` depending on
    /// which timer fires first. Tests set it far out to tell the two apart.
    public var backstopMilliseconds = 1000


    /// Creates an HTTP handler.
    public init(url: String, maxBytes: Int, allowFileURLs: Bool, client: HTTPClient = .shared) {
        self.client = client
        self.url = url
        self.maxBytes = maxBytes
        self.allowFileURLs = allowFileURLs
    }

    /// The transfer ends when the context expires (a `HTTPClient.Stopper` registered as an
    /// expiration callback) or the task is cancelled: the runner needs no task to stop it.
    public var stopsAtExpiration: Bool { true }

    /// Performs one GET and completes `context`.
    public func performFetch(context: FetchContext) async {
        let request = request(outputPath: context.outputPath,
                              timeoutMilliseconds: Int(context.timeRemaining / .milliseconds(1)) + backstopMilliseconds,
                              validators: context.previousSnapshotPath == nil ? nil : context.previousValidators)
        // At the deadline the runner expires the context, which ends the transfer (before or
        // after it is submitted); the handler then returns at once with nothing to report.
        let stopper = HTTPClient.Stopper()
        context.onExpiration { stopper.stop() }
        do {
            let response = try await client.fetch(request, stopper: stopper)
            guard !context.isExpired else { return }
            let answer = self.answer(to: response, conditional: request.isConditional)
            context.reportServerAnswer(answer.server)
            if let digest = answer.digest { context.reportContentDigest(digest) }
            context.complete(answer.completion)
        } catch {
            guard !context.isExpired else { return }  // stopped at the deadline: already settled
            // Stopped from outside (shutdown): the runner settles the fetch as interrupted.
            if error == .cancelled && Task.isCancelled { return }
            context.complete(.failed(reason: error.description))
        }
    }

    /// The GET of one fetch, writing to `outputPath` within `timeoutMilliseconds`. The
    /// `validators` make it conditional: pass them only when there is content to keep (a 304
    /// without a snapshot would leave none).
    public func request(outputPath: String, timeoutMilliseconds: Int, validators: HTTPValidators?) -> HTTPRequest {
        var request = HTTPRequest(url: url, outputPath: outputPath, userAgent: userAgent,
                                  timeoutMilliseconds: timeoutMilliseconds, maxBytes: maxBytes)
        request.allowFileURLs = allowFileURLs
        request.headers = headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        request.acceptEncoding = acceptEncoding
        request.proxy = proxy
        request.caFile = caFile
        request.globalAddressesOnly = globalAddressesOnly
        request.hashBody = true
        request.ifNoneMatch = validators?.etag
        request.ifModifiedSince = validators?.lastModified
        return request
    }

    /// Why a 304 to a request that carried no validator fails.
    static let unaskedNotModified = "HTTP 304 (not modified) to a request that was not conditional: there is no "
        + "snapshot to keep; the server (or a proxy before it) answers wrongly"

    /// What a response to a request that was `conditional` (or not) comes to: 2xx `newData`
    /// (with the digest of the body as written), 304 `noData` when the request was conditional,
    /// any other status `failed`; each with the details a snapshot keeps and what the server
    /// said beside the content. A 304 to a request that carried no validator says "keep what
    /// you have" when there is nothing to keep: a broken server or proxy, and no snapshot.
    public func answer(to response: HTTPResponse, conditional: Bool) -> (completion: HandlerCompletion, server: ServerAnswer,
                                                                         digest: FetchContext.ContentDigest?) {
        // Sized for the snapshot's details, twelve at most (status, two URLs, version, five
        // phases here; two validators and a server hint added when settled): growing the
        // dictionary entry by entry rehashed it three times, and more room than that stays in
        // every handler's cached metadata (SnapshotStore's latest; 16 here kept 11 MB more in
        // a wake of 10,000).
        var details: [String: String] = Dictionary(minimumCapacity: 12)
        details["status"] = String(response.status)
        details["request_url"] = url
        details["final_url"] = response.effectiveURL
        if let version = response.httpVersion { details["http_version"] = version }
        for (phase, milliseconds) in response.timings { details["\(phase)_ms"] = String(milliseconds) }
        let server = ServerAnswer(status: response.status, headers: response.headers)
        switch response.status {
        case 200..<300:
            let digest = response.bodySHA256.map { FetchContext.ContentDigest(sha256: HexText.lowercase($0), bytes: response.bodyBytes) }
            return (.newData(contentType: response.contentType, details: details), server, digest)
        case 304 where conditional:
            return (.noData(details: details), server, nil)
        case 304:
            return (.failed(reason: Self.unaskedNotModified, details: details), server, nil)
        default:
            return (.failed(reason: "HTTP \(response.status)", details: details), server, nil)
        }
    }
}
