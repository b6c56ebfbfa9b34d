import CurlKit
import FetchdConfig
import FetchdCore

/// Builds the runnable handler for a configured one.
public enum HandlerFactory {
    /// The handler that `config` describes, under the daemon's settings (`daemon`: the kill
    /// grace); http handlers run their transfers on `httpClient`.
    public static func make(_ config: HandlerConfig, daemon: DaemonConfig,
                            httpClient: HTTPClient = .shared) -> any FetchHandler {
        switch config.kind {
        case .exec:
            makeExec(config, daemon: daemon)
        case .http:
            makeHTTP(config, client: httpClient)
        case .transfer:
            // Transfers outlive any deadline, so the daemon runs them with `BackgroundTransfer`;
            // reaching here is a daemon bug, reported as a failure rather than a crash.
            Refusing(reason: "a transfer cannot run as a fetch handler; it runs as a background transfer")
        }
    }

    /// Completes every fetch as failed, for the reason given.
    private struct Refusing: FetchHandler {
        let reason: String
        func performFetch(context: FetchContext) async { context.complete(.failed(reason: reason)) }
    }

    /// An exec handler as `config` describes it (also a transfer's `on_complete`, with its command).
    public static func makeExec(_ config: HandlerConfig, command: [String]? = nil, daemon: DaemonConfig) -> ExecHandler {
        var handler = ExecHandler(command: command ?? config.command ?? ["/bin/false"], environment: config.environment,
                                  killGrace: .milliseconds(Int64(daemon.killGraceSeconds * 1000)))
        handler.user = config.user
        handler.maxBytes = config.maxBytes
        return handler
    }

    private static func makeHTTP(_ config: HandlerConfig, client: HTTPClient) -> HTTPHandler {
        var handler = HTTPHandler(url: config.url ?? "", maxBytes: config.maxBytes,
                                  allowFileURLs: config.allowFileURLs, client: client)
        if let userAgent = config.userAgent { handler.userAgent = userAgent }
        if let acceptEncoding = config.acceptEncoding { handler.acceptEncoding = acceptEncoding }
        handler.headers = config.headers
        handler.proxy = config.proxy
        handler.caFile = config.caFile
        return handler
    }
}
