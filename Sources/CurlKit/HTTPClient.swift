import Foundation

/// Runs HTTP transfers without blocking Swift's cooperative threads: each transfer gets its
/// own thread for the blocking `curl_easy_perform`, and task cancellation stops it through
/// libcurl's progress callback.
public enum HTTPClient {
    /// Performs `request`, writing the body to `request.outputPath`.
    public static func fetch(_ request: HTTPRequest) async throws(HTTPFailure) -> HTTPResponse {
        let cancel = CancelFlag()
        let result: Result<HTTPResponse, HTTPFailure> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let thread = Thread {
                    do throws(HTTPFailure) {
                        let easy = try CurlEasy()
                        continuation.resume(returning: .success(try easy.perform(request, cancel: cancel)))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
                thread.name = "fetchd-http"
                thread.start()
            }
        } onCancel: {
            cancel.cancel()
        }
        return try result.get()
    }
}
