import FetchdConfig
import FetchdCore
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// The optional push listener (`push_listen`): HTTP/1.1 for servers that want to wake this
/// machine's handlers, `POST /push/NAME` with a bearer token (see `PushResponder`). A
/// Hummingbird server, so the parsing, keep-alive and graceful shutdown are a maintained
/// library's; fetchd adds the limits: headers, body, time per request, connections, and per
/// source its connections and failed tokens (`PushSourceLimits`).
public struct PushListener: Service {
    /// What one client may cost the listener.
    public struct Limits: Sendable {
        /// The most bytes of request line and headers.
        public var headerMaxBytes = Defaults.pushHeaderMaxBytes
        /// The largest body (the push data).
        public var dataMaxBytes = Defaults.pushDataMaxBytes
        /// How long a whole request may take to arrive, in seconds.
        public var readTimeoutSeconds = Defaults.pushReadTimeoutSeconds
        /// Connections served at once.
        public var maxConnections = Defaults.pushMaxConnections
        /// Connections one source (an IPv4 address, an IPv6 /64, or all of loopback) may hold at once.
        public var maxConnectionsPerSource = Defaults.pushMaxConnectionsPerSource
        /// Pushes with a wrong or missing token one source may send per window before a 429.
        public var failedTokensPerWindow = Defaults.pushFailedTokensPerWindow
        /// That window, in seconds.
        public var failedTokenWindowSeconds = Defaults.pushFailedTokenWindowSeconds
        /// The one address never locked out for wrong tokens (`push_trusted_proxy`): a proxy in
        /// front of the listener, whose clients all share its address. Empty: none.
        public var trustedProxy = Defaults.pushTrustedProxy

        /// The defaults (`Defaults.push*`).
        public init() {}
    }

    /// Where to listen (`push_listen`).
    let address: ListenAddress
    /// Where tokens come from and authorised pushes go.
    let sink: any PushSink
    /// The daemon's logger.
    let logger: Logger
    /// What one client may cost.
    var limits: Limits

    /// A listener on `address` for `sink`, within `limits`.
    public init(address: ListenAddress, sink: any PushSink, logger: Logger, limits: Limits = Limits()) {
        self.address = address
        self.sink = sink
        self.logger = logger
        self.limits = limits
    }

    /// Listens until graceful shutdown; the bound address is shown by `fetchctl status`.
    public func run() async throws {
        let sink = self.sink
        let logger = self.logger
        let readTimeout = TimeAmount.milliseconds(Int64(limits.readTimeoutSeconds * 1000))
        if !address.isLoopback {
            logger.warning("push listener on \(address), not a loopback address: tokens travel in clear text; put a TLS proxy in front or listen on 127.0.0.1")
        }
        // The configuration checked the address; one that still does not parse exempts nobody.
        let proxy = limits.trustedProxy.isEmpty ? nil : try? SocketAddress(ipAddress: limits.trustedProxy, port: 0)
        if !limits.trustedProxy.isEmpty, proxy == nil {
            logger.error("push listener: push_trusted_proxy \"\(limits.trustedProxy)\" is not an IP address; no source is exempt from the wrong-token lockout")
        }
        let sources = PushSourceLimits(connectionsPerSource: limits.maxConnectionsPerSource,
                                       failuresPerWindow: limits.failedTokensPerWindow,
                                       windowSeconds: limits.failedTokenWindowSeconds,
                                       trustedProxy: proxy)
        let channel = HTTP1Channel.Configuration(
            additionalChannelHandlers: [PushSourceGate(limits: sources), PushConnectionGuard(readTimeout: readTimeout)],
            httpDecoderConfiguration: .init(maxHeaderFieldSize: limits.headerMaxBytes,
                                            maxHeaderListSize: limits.headerMaxBytes, maxHeaderFieldCount: 100))
        var quietLogger = logger
        quietLogger.logLevel = max(logger.logLevel, .notice)  // no per-request lines from the library
        let responder = PushResponder(sink: sink, dataMaxBytes: limits.dataMaxBytes, sources: sources, logger: logger)
        // HummingbirdCore's server, not Hummingbird's `Application`: the application adds a
        // service that refreshes its cached `Date` header every second, a wake-up a second for
        // a listener that mostly waits. The date is made per response instead (`HTTPDate`).
        let server = try HTTPServerBuilder.http1(configuration: channel).buildServer(
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: nil,
                                 availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections)),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: quietLogger,
            responder: { [quietLogger, logger] request, writer, channel in
                let context = PushRequestContext(source: .init(channel: channel, logger: quietLogger))
                var response: Response
                do {
                    response = try await responder.respond(to: request, context: context)
                } catch let error as HTTPParserError {
                    throw error  // the channel answers it and closes
                } catch {
                    // The responder answers every refusal itself; anything else is a bug to see.
                    logger.error("push listener: answering a request failed: \(error)")
                    response = Response(status: .internalServerError, headers: [.connection: "close"])
                }
                response.headers[.date] = HTTPDate.text(Date())
                try await writer.write(response: response.head, body: response.body)
            },
            onServerRunning: { channel in
                let bound = channel.localAddress.flatMap { $0.port }.map { ListenAddress(host: address.host, port: $0) }
                let shown = (bound ?? address).description
                await sink.listenerAddressChanged(shown)
                logger.notice("push listener on http://\(shown)/push/NAME")
            })
        try await server.run()
        await sink.listenerAddressChanged(nil)
    }
}
