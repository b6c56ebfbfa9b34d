import FetchdConfig
import FetchdCore

/// Told of every fetch's end, once its result is recorded and its snapshot published: the
/// D-Bus API's `FetchCompleted` signal. Called on the coordinator: it must return at once.
protocol FetchCompletionObserver: Sendable {
    /// `record` of `handler` is recorded.
    func fetchCompleted(_ record: CompletedFetch, of handler: HandlerConfig)
}

extension FetchCoordinator {
    /// Has `observer` told of every fetch's end from now on.
    func observeCompletions(_ observer: any FetchCompletionObserver) { completionObserver = observer }
}
