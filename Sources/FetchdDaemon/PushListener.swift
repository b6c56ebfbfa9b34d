import FetchdConfig
import FetchdCore
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The optional push listener (`push_listen`): HTTP/1.1 for servers that want to wake this
/// machine's handlers, `POST /push/NAME` with a bearer token (see `PushResponder`). A
/// Hummingbird application, so the parsing, keep-alive and graceful shutdown are a maintained
/// library's; fetchd adds the limits: headers, body, time per request, connections, and per
/// source address its connections and failed tokens (`PushSourceLimits`).
struct PushListener: Service {
    /// What one client may cost the listener.
    struct Limits: Sendable {
        /// The most bytes of request line and headers.
        var headerMaxBytes = Defaults.pushHeaderMaxBytes
        /// The largest body (the push data).
        var dataMaxBytes = Defaults.pushDataMaxBytes
        /// How long a whole request may take to arrive, in seconds.
        var readTimeoutSeconds = Defaults.pushReadTimeoutSeconds
        /// Connections served at once.
        var maxConnections = Defaults.pushMaxConnections
        /// Connections one source address (IPv6: /64) may hold at once.
        var maxConnectionsPerSource = Defaults.pushMaxConnectionsPerSource
        /// Pushes with a wrong or missing token one source may send per window before a 429.
        var failedTokensPerWindow = Defaults.pushFailedTokensPerWindow
        /// That window, in seconds.
        var failedTokenWindowSeconds = Defaults.pushFailedTokenWindowSeconds
        /// Whether a loopback source is locked out for wrong tokens like any other: false, since it
        /// is the local proxy every client comes through (tests, which connect only over
        /// loopback, set it to check the lockout itself).
        var lockOutLoopback = false
    }

    /// Where to listen (`push_listen`).
    let address: ListenAddress
    /// Where accepted pushes go.
    let intake: PushIntake
    /// The daemon's logger.
    let logger: Logger
    /// What one client may cost.
    var limits = Limits()

    /// Listens until graceful shutdown; the bound address is shown by `fetchctl status`.
    func run() async throws {
        let coordinator = intake.coordinator
        let logger = self.logger
        let readTimeout = TimeAmount.milliseconds(Int64(limits.readTimeoutSeconds * 1000))
        if !address.isLoopback {
            logger.warning("push listener on \(address), not a loopback address: tokens travel in clear text; put a TLS proxy in front or listen on 127.0.0.1")
        }
        let sources = PushSourceLimits(connectionsPerSource: limits.maxConnectionsPerSource,
                                       failuresPerWindow: limits.failedTokensPerWindow,
                                       windowSeconds: limits.failedTokenWindowSeconds,
                                       lockOutLoopback: limits.lockOutLoopback)
        let channel = HTTP1Channel.Configuration(
            additionalChannelHandlers: [PushSourceGate(limits: sources), PushConnectionGuard(readTimeout: readTimeout)],
            httpDecoderConfiguration: .init(maxHeaderFieldSize: limits.headerMaxBytes,
                                            maxHeaderListSize: limits.headerMaxBytes, maxHeaderFieldCount: 100))
        var quietLogger = logger
        quietLogger.logLevel = max(logger.logLevel, .notice)  // no per-request lines from the library
        let application = Application(
            responder: PushResponder(intake: intake, coordinator: coordinator, dataMaxBytes: limits.dataMaxBytes,
                                     sources: sources, logger: logger),
            server: .http1(configuration: channel),
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: nil,
                                 availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections)),
            onServerRunning: { channel in
                let bound = channel.localAddress.flatMap { $0.port }.map { ListenAddress(host: address.host, port: $0) }
                let shown = (bound ?? address).description
                await coordinator.setPushListenerAddress(shown)
                logger.notice("push listener on http://\(shown)/push/NAME")
            },
            logger: quietLogger)
        try await application.run()
        await coordinator.setPushListenerAddress(nil)
    }
}
