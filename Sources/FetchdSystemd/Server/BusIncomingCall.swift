import CSystemdShim
import Synchronization

/// A method call a `BusServer` received, as its `onCall` sees it: the arguments to read there
/// and then, and the responder that answers later.
public struct BusIncomingCall {
    /// The call's message: read the arguments from it during `onCall` only.
    public let arguments: BusMessage
    /// Answers the call, exactly once.
    public let responder: BusResponder

    init(message: BusMessage, server: BusServer) {
        arguments = message
        responder = BusResponder(call: message, server: server)
    }

    /// The method's name.
    public var member: String { arguments.member ?? "" }

    /// The caller's unique connection name (`:1.42`).
    public var sender: String? { arguments.sender }

    /// The caller's effective uid, as the bus vouches for it (a synchronous question to the bus
    /// when the message does not carry it).
    public func senderUID() throws(BusError) -> UInt32 {
        var uid: UInt32 = 0
        let result = fetchd_bus_message_sender_uid(arguments.rawMessage, &uid)
        guard result >= 0 else { throw BusError(operation: "ask the bus who called", errno: result) }
        return uid
    }
}

/// Answers one method call exactly once: the first `reply` is sent, later ones are ignored, and
/// a call dropped without an answer gets `org.freedesktop.DBus.Error.Failed` (a caller must
/// never wait for its timeout because fetchd forgot it). The call's message is released on the
/// server's queue, where sd-bus uses it.
public final class BusResponder: Sendable {
    /// The call's message, which only the server's queue touches (hence unchecked).
    private struct Call: @unchecked Sendable { let message: BusMessage }

    private let call: Mutex<Call?>
    private let server: BusServer

    init(call: BusMessage, server: BusServer) {
        self.call = Mutex(Call(message: call))
        self.server = server
    }

    deinit {
        guard let unanswered = call.withLock({ $0.take() }) else { return }
        let server = self.server
        server.onQueueAsync {
            server.send(.error(BusReplyError(name: "org.freedesktop.DBus.Error.Failed",
                                             message: "fetchd dropped the call without an answer; try again")),
                        to: unanswered.message)
        }
    }

    /// Sends `reply` (a named error included) unless the call was answered already.
    public func reply(_ reply: BusReply) {
        guard let answered = call.withLock({ $0.take() }) else {
            reply.discard()
            return
        }
        let server = self.server
        server.onQueueAsync { server.send(reply, to: answered.message) }
    }

    /// Answers with the error `error`.
    public func fail(_ error: BusReplyError) { reply(.error(error)) }
}
