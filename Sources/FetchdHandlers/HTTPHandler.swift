import CurlKit
import FetchdCore
import Foundation

/// Fetches a URL with libcurl; the response body becomes the snapshot.
///
/// 2xx is `newData` (the daemon turns byte-identical content into `noData`); 304 is `noData`;
/// any other status is `failed` with the code. The transfer's time limit is the fetch's
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

    /// Creates an HTTP handler.
    public init(url: String, maxBytes: Int, allowFileURLs: Bool) {
        self.url = url
        self.maxBytes = maxBytes
        self.allowFileURLs = allowFileURLs
    }

    /// Performs one GET and completes `context`.
    public func performFetch(context: FetchContext) async {
        var request = HTTPRequest(
            url: url, outputPath: context.outputPath, userAgent: userAgent,
            timeoutMilliseconds: Int(context.timeRemaining / .milliseconds(1)), maxBytes: maxBytes)
        request.allowFileURLs = allowFileURLs
        do {
            let response = try await HTTPClient.fetch(request)
            let details = [
                "status": String(response.status),
                "final_url": response.effectiveURL,
                "total_ms": String(response.totalMilliseconds),
            ]
            switch response.status {
            case 200..<300:
                context.complete(.newData(contentType: response.contentType, details: details))
            case 304:
                context.complete(.noData(details: details))
            default:
                context.complete(.failed(reason: "HTTP \(response.status)", details: details))
            }
        } catch {
            context.complete(.failed(reason: error.description))
        }
    }
}
