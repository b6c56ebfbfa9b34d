import CSystemdShim
import Foundation

extension BusServer {
    /// What polkit answered about one caller and one action.
    public enum Authorization: Sendable, Equatable {
        /// The caller may.
        case authorized
        /// The caller may not.
        case notAuthorized
        /// The caller may if its user authenticates, which the call did not allow.
        case challenge
        /// polkit gave no answer (not running, timed out, the bus went away): why.
        case noAnswer(String)
    }

    /// How long polkit may take: an authentication dialog waits for a person, and a D-Bus
    /// caller's own timeout (25 s by default) ends the wait sooner anyway.
    public static let polkitTimeoutSeconds = 120.0

    /// Asks polkit on this connection whether the connection `sender` may do `action`; with
    /// `interactive`, polkit may ask its user to authenticate. Never blocks the server's queue:
    /// other calls are answered meanwhile.
    public func checkAuthorization(sender: String, action: String, interactive: Bool) async -> Authorization {
        await withCheckedContinuation { (continuation: CheckedContinuation<Authorization, Never>) in
            let question = PolkitQuestion(continuation)
            onQueueAsync {
                // The C side holds this reference until its callback, which runs exactly once.
                let context = Unmanaged.passRetained(question).toOpaque()
                let sent = self.withConnectionResult { connection in
                    fetchd_polkit_check(connection.handle, sender, action, interactive ? 1 : 0,
                                        UInt64(Self.polkitTimeoutSeconds * 1_000_000), { context, answer, name, text in
                        guard let context else { return }
                        let question = Unmanaged<PolkitQuestion>.fromOpaque(context).takeRetainedValue()
                        question.continuation.resume(returning: Authorization(answer, name.map { String(cString: $0) },
                                                                             text.map { String(cString: $0) }))
                    }, context)
                }
                guard let sent, sent >= 0 else {
                    Unmanaged<PolkitQuestion>.fromOpaque(context).release()
                    let reason = sent.map { String(cString: strerror(-$0)) } ?? "the bus connection is closed"
                    question.continuation.resume(returning: .noAnswer("cannot ask polkit: \(reason)"))
                    return
                }
            }
        }
    }
}

/// One polkit question's continuation, carried through C as an opaque pointer.
private final class PolkitQuestion: @unchecked Sendable {
    let continuation: CheckedContinuation<BusServer.Authorization, Never>
    init(_ continuation: CheckedContinuation<BusServer.Authorization, Never>) { self.continuation = continuation }
}

extension BusServer.Authorization {
    fileprivate init(_ answer: Int32, _ errorName: String?, _ errorText: String?) {
        switch answer {
        case Int32(FETCHD_POLKIT_AUTHORIZED.rawValue): self = .authorized
        case Int32(FETCHD_POLKIT_CHALLENGE.rawValue): self = .challenge
        case Int32(FETCHD_POLKIT_NOT_AUTHORIZED.rawValue): self = .notAuthorized
        default:
            self = .noAnswer([errorName, errorText].compactMap { $0 }.joined(separator: ": "))
        }
    }
}
