import Synchronization

extension HTTPClient {
    /// Ends one fetch from any thread, at any moment: before it is submitted (the fetch then
    /// fails at once with `.cancelled`), while libcurl drives it, or after it ended (nothing
    /// happens). For a fetch whose deadline is not its task's cancellation: the http handler's
    /// deadline runs on a timer thread and stops the transfer through this.
    public final class Stopper: Sendable {
        private struct State {
            var stopped = false
            /// The transfer this stopper ends, once its fetch has been submitted.
            var transfer: (client: HTTPClient, id: Int)?
        }
        private let state = Mutex(State())

        /// A stopper not yet attached to a fetch.
        public init() {}

        /// Whether `stop()` has been called.
        public var isStopped: Bool { state.withLock { $0.stopped } }

        /// Ends the fetch: at once if it is running, when it is submitted if it is not yet.
        public func stop() {
            let transfer = state.withLock { state in
                state.stopped = true
                defer { state.transfer = nil }
                return state.transfer
            }
            if let transfer { transfer.client.cancel(id: transfer.id) }
        }

        /// Runs `submit` (the fetch's submission to the driver) unless stopped, and remembers
        /// the transfer. Under the stopper's lock: a `stop` either comes first and the fetch is
        /// refused, or comes after the submission is in the inbox, so the driver sees the
        /// transfer before its cancellation. Returns nil when stopped.
        func attach<T>(client: HTTPClient, id: Int, _ submit: () -> T) -> T? {
            state.withLock { state in
                guard !state.stopped else { return nil }
                state.transfer = (client, id)
                return submit()
            }
        }
    }
}
