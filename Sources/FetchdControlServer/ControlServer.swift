import FetchdControl
import FetchdCore
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The control socket: a Unix stream socket speaking `ControlProtocol`, run as a `Service`.
public struct ControlServer: Service {
    /// The socket's path.
    public let path: String
    /// The socket file's permission bits.
    public let mode: Int
    /// Who may connect.
    public let policy: PeerPolicy
    /// Where requests go.
    public let handler: any ControlRequestHandler
    /// Where connection problems are logged.
    public let logger: Logger
    /// Called once the socket is bound and ready (the daemon reports readiness after it).
    public let onReady: @Sendable () -> Void
    /// A socket already bound and listening, passed by systemd socket activation; when set, the
    /// server adopts it and neither creates nor removes the socket file.
    public let activatedSocket: Int32?

    /// Creates the server; nothing is bound until `run()`.
    public init(path: String, mode: Int, policy: PeerPolicy, handler: any ControlRequestHandler, logger: Logger,
                activatedSocket: Int32? = nil, onReady: @escaping @Sendable () -> Void = {}) {
        self.activatedSocket = activatedSocket
        self.path = path
        self.mode = mode
        self.policy = policy
        self.handler = handler
        self.logger = logger
        self.onReady = onReady
    }

    /// Binds the socket and serves until graceful shutdown.
    public func run() async throws {
        let server = try await bind()
        onReady()
        defer { if activatedSocket == nil { unlink(path) } }
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        // An idle client must not hold the daemon up at shutdown.
                        group.addTask { _ = await cancelWhenGracefulShutdown { await serve(connection) } }
                    }
                }
            }
        } onGracefulShutdown: {
            server.channel.close(promise: nil)
        }
    }

    private typealias Connection = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    /// Adopts the activated socket, or binds `path` with `mode`.
    private func bind() async throws -> NIOAsyncChannel<Connection, Never> {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            // A client that shuts down its sending side after its request (socat, `nc -N`, a
            // pipe) still gets the answer: the inbound stream ends, the outbound stays open.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<Connection> = { child in
            child.eventLoop.makeCompletedFuture {
                // Bounded: a client cannot make the daemon buffer more than one maximal request.
                try child.pipeline.syncOperations.addHandler(ByteToMessageHandler(
                    RequestLineDecoder(), maximumBufferSize: ControlProtocol.maxLineBytes))
                return try Connection(wrappingChannelSynchronously: child)
            }
        }
        if let activatedSocket {
            return try await bootstrap.bind(activatedSocket, childChannelInitializer: initializer)
        }
        try FileManager.default.createDirectory(atPath: PathName.directory(of: path),
                                                withIntermediateDirectories: true)
        // Not umask(): it is process-wide, and handlers create files concurrently. Between bind and
        // chmod the socket has the daemon's default mode (no write bit for others under the
        // shipped UMask=0022), and every peer is checked with SO_PEERCRED anyway.
        let server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true,
                                              childChannelInitializer: initializer)
        if chmod(path, mode_t(mode)) != 0 {
            logger.warning("cannot set mode \(String(mode, radix: 8)) on the control socket \(path): \(String(cString: strerror(errno))); peers are still checked one by one (SO_PEERCRED)")
        }
        // uid -1: keep the owner.
        if let group = policy.allowedGroupID, chown(path, uid_t.max, group) != 0 {
            logger.warning("cannot give the control socket \(path) to group \(group) (control_group): \(String(cString: strerror(errno))); its members cannot connect. Under the shipped unit chown is filtered out: set the group with fetchd.socket's SocketGroup= instead")
        }
        return server
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                let peer = try await Self.credentials(of: connection.channel)
                if let refusal = policy.refusal(for: peer) {
                    logger.warning("refused control connection", metadata: ["uid": "\(peer.uid)", "pid": "\(peer.pid)"])
                    try await outbound.write(Self.encode(.failure(.unauthorized, refusal)))
                    return
                }
                for try await line in inbound {
                    let response = await respond(to: line, from: peer)
                    try await outbound.write(Self.encode(response))
                }
            }
        } catch {
            logger.debug("control connection ended: \(error)")
        }
    }

    private func respond(to line: ByteBuffer, from peer: PeerCredentials) async -> ControlResponse {
        switch ControlProtocol.parse(Data(line.readableBytesView)) {
        case .success(let request): return await handler.handle(request, from: peer)
        case .failure(let error): return ControlResponse(ok: false, error: error)
        }
    }

    private static func encode(_ response: ControlResponse) -> ByteBuffer {
        var data = (try? ControlProtocol.encoder().encode(response)) ?? Data(#"{"ok":false,"version":1}"#.utf8)
        data.append(UInt8(ascii: "\n"))
        return ByteBuffer(bytes: data)
    }

    private static func credentials(of channel: any Channel) async throws -> PeerCredentials {
        guard let provider = channel as? any SocketOptionProvider else {
            throw ControlError(code: .internalError, message: "the control channel has no socket options")
        }
        let credentials: PeerCredentials.Kernel = try await provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED)).get()
        return PeerCredentials(credentials)
    }
}
