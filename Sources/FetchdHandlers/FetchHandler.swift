import FetchdCore

/// What a handler reports through `FetchContext.complete(_:)`: the three iOS results.
public enum HandlerCompletion: Sendable, Equatable {
    /// New content was written to `context.outputPath`; `contentType` is recorded when known.
    case newData(contentType: String? = nil, details: [String: String] = [:])
    /// Nothing new; `details` (e.g. an HTTP status) are recorded in the history only.
    case noData(details: [String: String] = [:])
    /// The fetch failed, for the reason given.
    case failed(reason: String, details: [String: String] = [:])
}

/// A fetch handler: the code that runs when the daemon decides a handler is due.
///
/// The contract mirrors iOS's `application(_:performFetchWithCompletionHandler:)`: call
/// `context.complete(_:)` exactly once, before `context.deadline`. A handler that has not
/// completed by then is told through its expiration callbacks and its task is cancelled;
/// it must then stop promptly (the built-in handlers stop within the kill grace period).
///
/// ```swift
/// struct Weather: FetchHandler {
///     func performFetch(context: FetchContext) async {
///         context.onExpiration { /* stop work: the deadline has passed */ }
///         // write to context.outputPath; check context.timeRemaining; honour task cancellation
///         context.complete(.newData(contentType: "application/json"))
///     }
/// }
/// ```
///
/// The context carries the deadline and the time remaining, the previous snapshot's path, the
/// trigger and a push wake's data (`pushData`), and the expiration callbacks.
public protocol FetchHandler: Sendable {
    /// Performs one fetch. Returning without completing is allowed (completion may come
    /// from elsewhere), but a fetch with no completion by the deadline is recorded as `expired`.
    func performFetch(context: FetchContext) async

    /// True when the handler ends its work promptly once its context expires (it registers
    /// `FetchContext.onExpiration` to stop) and when its task is cancelled. The runner then
    /// runs it in the caller's own task, with the deadline as an action on the shared timer,
    /// instead of a child task for the handler and another for the deadline. Its expiration
    /// callbacks then run on the shared timer thread and may still be finishing when the run
    /// has returned (the handler returned first): they must be short, must not block, and must
    /// not touch the output file. Default: false.
    var stopsAtExpiration: Bool { get }
}

extension FetchHandler {
    /// Handlers that rely on their task being cancelled at the deadline (the default).
    public var stopsAtExpiration: Bool { false }
}
