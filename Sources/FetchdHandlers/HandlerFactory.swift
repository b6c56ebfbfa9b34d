import FetchdConfig
import FetchdCore

/// Builds the runnable handler for a configured one.
public enum HandlerFactory {
    /// The handler that `config` describes; `killGraceSeconds` comes from the daemon settings.
    public static func make(_ config: HandlerConfig, killGraceSeconds: Double) -> any FetchHandler {
        switch config.kind {
        case .exec:
            ExecHandler(command: config.command ?? ["/bin/false"], environment: config.environment,
                        killGrace: .milliseconds(Int64(killGraceSeconds * 1000)))
        case .http:
            HTTPHandler(url: config.url ?? "", maxBytes: config.maxBytes, allowFileURLs: config.allowFileURLs)
        }
    }
}
