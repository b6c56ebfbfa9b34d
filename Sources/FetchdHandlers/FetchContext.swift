import FetchdCore
import Foundation
import Synchronization

/// Everything a handler is given for one fetch, and the one way to report its result.
///
/// Thread-safe: a handler may complete, register expiration callbacks or read the time left
/// from any task.
public final class FetchContext: Sendable {
    /// The handler's name.
    public let handlerName: String
    /// Why this fetch runs.
    public let trigger: FetchTrigger
    /// Where the handler writes new content (`FETCHD_OUTPUT` for exec handlers).
    public let outputPath: String
    /// For a program running as another user: where it writes instead (`FETCHD_OUTPUT`), in a
    /// folder that user owns; the handler moves the file to `outputPath` after the program.
    public let userOutputPath: String?
    /// The latest snapshot's content, if there is one (`FETCHD_PREVIOUS`).
    public let previousSnapshotPath: String?
    /// The wall-clock deadline, for programs that want it (`FETCHD_DEADLINE`).
    public let wallDeadline: Date
    /// The deadline on the monotonic clock; this is what is enforced.
    public let deadline: ContinuousClock.Instant
    /// The HTTP validators stored with the latest snapshot, for a conditional request.
    public let previousValidators: HTTPValidators?
    /// For a push wake (`trigger == .push`): the push's data, a JSON text of at most
    /// `Defaults.pushDataMaxBytes` bytes (`FETCHD_PUSH_DATA`), when it carried any.
    public let pushData: String?

    /// The SHA-256 (lower-case hex) and size of the content a handler wrote to `outputPath`,
    /// hashed as it was written.
    public struct ContentDigest: Sendable, Equatable {
        /// SHA-256, lower-case hex.
        public var sha256: String
        /// The size it covers, in bytes.
        public var bytes: Int

        /// Creates a digest.
        public init(sha256: String, bytes: Int) {
            self.sha256 = sha256
            self.bytes = bytes
        }
    }

    private struct Shared {
        var completion: HandlerCompletion?
        var contentDigest: ContentDigest?
        var serverAnswer: ServerAnswer?
        var expired = false
        var lateCompletions = 0
        var expirationHandlers: [@Sendable () -> Void] = []
        var completionWaiter: CheckedContinuation<Void, Never>?
        var waiterReleased = false
    }
    private let shared = Mutex(Shared())

    /// Creates a context; the runner does this.
    public init(handlerName: String, trigger: FetchTrigger, outputPath: String, previousSnapshotPath: String?,
                deadline: ContinuousClock.Instant, wallDeadline: Date, previousValidators: HTTPValidators? = nil,
                pushData: String? = nil, userOutputPath: String? = nil) {
        self.handlerName = handlerName
        self.trigger = trigger
        self.outputPath = outputPath
        self.userOutputPath = userOutputPath
        self.previousSnapshotPath = previousSnapshotPath
        self.deadline = deadline
        self.wallDeadline = wallDeadline
        self.previousValidators = previousValidators
        self.pushData = pushData
    }

    /// Time left before the deadline (zero once it has passed).
    public var timeRemaining: Duration {
        max(.zero, deadline - ContinuousClock.now)
    }

    /// True once the deadline has passed and the fetch has been expired.
    public var isExpired: Bool { shared.withLock { $0.expired } }

    /// Reports the result. Only the first call counts; later calls (or calls after the deadline)
    /// are ignored and returned as false so the runner can log them.
    @discardableResult
    public func complete(_ completion: HandlerCompletion) -> Bool {
        let waiter: CheckedContinuation<Void, Never>?
        let accepted: Bool
        (accepted, waiter) = shared.withLock { state in
            guard state.completion == nil, !state.expired else {
                state.lateCompletions += 1
                return (false, nil)
            }
            state.completion = completion
            defer { state.completionWaiter = nil }
            return (true, state.completionWaiter)
        }
        waiter?.resume()
        return accepted
    }

    /// Reports the digest of what the handler wrote to `outputPath`, computed while writing it,
    /// so publishing the snapshot does not read it back to hash it (call before `complete`).
    /// Only for handlers inside fetchd (a program's word is never taken for it); the size is
    /// checked against the file again before the digest is used.
    public func reportContentDigest(_ digest: ContentDigest) {
        shared.withLock { $0.contentDigest = digest }
    }

    /// Reports what the server said beside the content (its validators, the delay it asks for;
    /// call before `complete`). Only for handlers inside fetchd.
    public func reportServerAnswer(_ answer: ServerAnswer) {
        shared.withLock { $0.serverAnswer = answer }
    }

    /// Registers a callback run once when the deadline passes without a completion (iOS's
    /// expiration handler). Registered after expiry, it runs at once.
    public func onExpiration(_ body: @escaping @Sendable () -> Void) {
        let runNow = shared.withLock { state in
            if state.expired { return true }
            state.expirationHandlers.append(body)
            return false
        }
        if runNow { body() }
    }

    // MARK: - Runner side

    /// The accepted completion, if any.
    var completion: HandlerCompletion? { shared.withLock { $0.completion } }

    /// What `reportContentDigest` said, if anything.
    var contentDigest: ContentDigest? { shared.withLock { $0.contentDigest } }

    /// What `reportServerAnswer` said, if anything.
    var serverAnswer: ServerAnswer? { shared.withLock { $0.serverAnswer } }

    /// How many completions were ignored (second or late calls).
    var ignoredCompletions: Int { shared.withLock { $0.lateCompletions } }

    /// Marks the fetch expired unless it completed first; runs the expiration callbacks.
    /// Returns true when this call expired it.
    func expire() -> Bool {
        let handlers: [@Sendable () -> Void]? = shared.withLock { state in
            guard state.completion == nil, !state.expired else { return nil }
            state.expired = true
            defer { state.expirationHandlers = [] }
            return state.expirationHandlers
        }
        handlers?.forEach { $0() }
        return handlers != nil
    }

    /// Suspends until a completion arrives (returns at once if one already has).
    func waitForCompletion() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = shared.withLock { state in
                if state.completion != nil || state.expired || state.waiterReleased { return true }
                state.completionWaiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Wakes `waitForCompletion` without a completion (used at expiry).
    func releaseWaiter() {
        let waiter = shared.withLock { state in
            state.waiterReleased = true
            defer { state.completionWaiter = nil }
            return state.completionWaiter
        }
        waiter?.resume()
    }
}
