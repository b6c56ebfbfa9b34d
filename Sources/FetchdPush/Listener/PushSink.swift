import FetchdControl

/// What the push listener needs of the daemon, and nothing more: the token to check a request
/// against, a place to hand an authorised push, and a place to say where it listens. The
/// daemon's `PushIntake` is one; a test can be another.
public protocol PushSink: Sendable {
    /// The token a push for `handler` must carry; nil when no such handler is loaded or it takes
    /// no pushes from the network (no `push_token_file`). Asked per request, so a reload's
    /// tokens count at once.
    func pushToken(of handler: String) async -> String?

    /// Takes an authorised push of `handler` carrying `data` (empty: none). The report says
    /// whether it fetches now or was coalesced, and when that runs.
    func push(_ handler: String, data: [UInt8]) async throws(PushRefusal) -> PushReport

    /// The address the listener is bound to once it listens (`fetchctl status` shows it), nil
    /// once it has stopped.
    func listenerAddressChanged(_ address: String?) async
}
