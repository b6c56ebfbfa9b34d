import CurlKit
import FetchdConfig
import FetchdCore

/// Builds the runnable handler for a configured one.
public enum HandlerFactory {
    /// The handler that `config` describes, under the daemon's settings (`daemon`: the kill
    /// grace); http handlers run their transfers on `httpClient`.
    public static func make(_ config: HandlerConfig, daemon: DaemonConfig,
                            httpClient: HTTPClient = .shared) -> any FetchHandler {
        switch config.options {
        case .exec(let program):
            makeProgram(config, command: program.command, daemon: daemon)
        case .http(let request):
            makeHTTP(request, maxBytes: config.maxBytes, client: httpClient)
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

    /// An exec handler's program (`command`), a transfer's `on_complete` with the published
    /// file (`snapshot`), or a failure alert's program (`command`, the handler's `alertCommand`)
    /// with `alert` in its environment: run by fetchd-runas when `daemon.runasSocket` is set
    /// (which resolves the program from the configuration itself), else by fetchd.
    public static func makeProgram(_ config: HandlerConfig, command: [String], snapshot: String? = nil,
                                   alert: FailureAlert? = nil, daemon: DaemonConfig) -> any FetchHandler {
        let grace = Duration.milliseconds(Int64(daemon.killGraceSeconds * 1000))
        if let socket = daemon.runasSocket {
            let program: RunasRequest.Program = alert != nil ? .onFailure : snapshot == nil ? .command : .onComplete
            var handler = RunasExecHandler(socketPath: socket, program: program, killGrace: grace)
            handler.snapshot = snapshot
            handler.alert = alert
            return handler
        }
        if let alert {
            var program = makeExec(config, command: command, daemon: daemon)
            program.runsBeside(snapshot: nil, alert: alert)
            return program
        }
        guard let snapshot else { return makeExec(config, command: command, daemon: daemon) }
        return makeOnComplete(config, command: command, snapshot: snapshot, daemon: daemon)
    }

    /// A transfer's `on_complete`, run by fetchd, with the published file appended.
    private static func makeOnComplete(_ config: HandlerConfig, command: [String], snapshot: String,
                                       daemon: DaemonConfig) -> ExecHandler {
        var program = makeExec(config, command: command + [snapshot], daemon: daemon)
        program.runsBeside(snapshot: snapshot, alert: nil)
        return program
    }

    /// The program `command` under `config`'s environment, user and `max_bytes`: an exec
    /// handler's, or a transfer's `on_complete`.
    public static func makeExec(_ config: HandlerConfig, command: [String], daemon: DaemonConfig) -> ExecHandler {
        var handler = ExecHandler(command: command, environment: config.environment,
                                  killGrace: .milliseconds(Int64(daemon.killGraceSeconds * 1000)))
        handler.user = config.user
        handler.maxBytes = config.maxBytes
        return handler
    }

    /// The http handler of `config`, running on `client`; nil for another kind. A wake's batch
    /// builds its requests and reads its responses with it, without running it.
    public static func makeHTTP(_ config: HandlerConfig, client: HTTPClient) -> HTTPHandler? {
        guard case .http(let request) = config.options else { return nil }
        return makeHTTP(request, maxBytes: config.maxBytes, client: client)
    }

    private static func makeHTTP(_ request: HTTPOptions, maxBytes: Int, client: HTTPClient) -> HTTPHandler {
        var handler = HTTPHandler(url: request.url, maxBytes: maxBytes, allowFileURLs: request.allowFileURLs, client: client)
        if let userAgent = request.userAgent { handler.userAgent = userAgent }
        if let acceptEncoding = request.acceptEncoding { handler.acceptEncoding = acceptEncoding }
        handler.headers = request.headers
        handler.proxy = request.proxy
        handler.caFile = request.caFile
        handler.globalAddressesOnly = request.globalAddressesOnly
        return handler
    }
}
