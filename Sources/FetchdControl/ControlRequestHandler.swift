/// Answers control requests; the daemon implements it. Every transport hands its requests here
/// (the Unix socket's `ControlServer` in FetchdControlServer), so a request means the same
/// whichever way it came.
public protocol ControlRequestHandler: Sendable {
    /// Handles one request from an authorised peer.
    func handle(_ request: ControlRequest, from peer: PeerCredentials) async -> ControlResponse
}

/// The identity of the process that sent a control request, as the kernel reports it to the
/// transport (`SO_PEERCRED` on the control socket), so a client cannot forge it.
public struct PeerCredentials: Sendable, Equatable {
    /// The peer's process id.
    public var pid: Int32
    /// The peer's effective user id.
    public var uid: UInt32
    /// The peer's effective group id.
    public var gid: UInt32

    /// Creates credentials.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}
