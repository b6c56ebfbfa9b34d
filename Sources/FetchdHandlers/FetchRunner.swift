import FetchdClock
import FetchdCore
import Foundation

/// Runs one handler under its deadline and turns what happened into exactly one result.
///
/// A handler that stops itself at expiration (`FetchHandler.stopsAtExpiration`, the http
/// handler) runs in the caller's task (`FetchRunner+Inline.swift`). Any other runs in a child
/// task. The runner waits for its completion or its deadline, whichever comes first. At the deadline it runs the context's expiration callbacks and
/// cancels the handler's task (exec handlers then SIGTERM/SIGKILL their process group), and
/// it waits for the handler to return before reporting, so nothing outlives the run.
public struct FetchRunner: Sendable {
    /// What happened.
    public struct Outcome: Sendable, Equatable {
        /// The completion the handler reported in time, or nil.
        public var completion: HandlerCompletion?
        /// True when the deadline passed without a completion.
        public var expired: Bool
        /// True when the run was cancelled from outside (daemon shutdown) before completing.
        public var interrupted: Bool
        /// Completions that were ignored (second or late calls).
        public var ignoredCompletions: Int
        /// The digest of the content written, when the handler hashed it while writing.
        public var contentDigest: FetchContext.ContentDigest?
        /// What the server said beside the content, for an http fetch.
        public var serverAnswer: ServerAnswer?

        /// Creates an outcome (the runner does; so does a caller settling a result it got another way).
        public init(completion: HandlerCompletion?, expired: Bool = false, interrupted: Bool = false,
                    ignoredCompletions: Int = 0, contentDigest: FetchContext.ContentDigest? = nil,
                    serverAnswer: ServerAnswer? = nil) {
            self.completion = completion
            self.expired = expired
            self.interrupted = interrupted
            self.ignoredCompletions = ignoredCompletions
            self.contentDigest = contentDigest
            self.serverAnswer = serverAnswer
        }

        /// What a finished run of `context` came to: no completion is `expired`, unless the run
        /// was `interrupted`.
        init(of context: FetchContext, interrupted: Bool) {
            self.init(completion: context.completion, expired: context.completion == nil && !interrupted,
                      interrupted: interrupted, ignoredCompletions: context.ignoredCompletions,
                      contentDigest: context.contentDigest, serverAnswer: context.serverAnswer)
        }
    }

    private enum Event { case handlerReturned, completed, deadline, cancelled }

    /// Creates a runner.
    public init() {}

    /// Runs `handler` with `context` and returns once the handler has returned.
    public func run(_ handler: any FetchHandler, context: FetchContext) async -> Outcome {
        if handler.stopsAtExpiration { return await runInline(handler, context: context) }
        var handlerReturned = false
        var deadlineResolved = false
        var interrupted = false
        await withTaskGroup(of: Event.self) { group in
            group.addTask {
                await handler.performFetch(context: context)
                return .handlerReturned
            }
            group.addTask {
                await DeadlineTimer.shared.sleep(until: context.deadline) ? .deadline : .cancelled
            }
            while let event = await group.next() {
                switch event {
                case .handlerReturned:
                    handlerReturned = true
                    // Returned without completing: a completion may still come from elsewhere
                    // until the deadline, so wait for one. Only then: most handlers complete
                    // before they return, and a third task per fetch was a cost of every fetch.
                    if context.completion == nil && !deadlineResolved {
                        group.addTask {
                            await context.waitForCompletion()
                            return .completed
                        }
                    }
                case .completed:
                    break
                case .deadline:
                    deadlineResolved = true
                    if context.expire() { context.releaseWaiter() }
                    if !handlerReturned { group.cancelAll() }  // stop a handler still running at the deadline
                case .cancelled:
                    deadlineResolved = true
                    if context.completion == nil {  // shutdown: take the expiration path
                        interrupted = true
                        _ = context.expire()
                        context.releaseWaiter()
                    }
                }
                // Done when the handler has returned and its result is settled; a handler that
                // returned without completing may still complete from elsewhere until the deadline.
                if handlerReturned && (context.completion != nil || deadlineResolved) {
                    group.cancelAll()
                    context.releaseWaiter()
                }
            }
        }
        return Outcome(of: context, interrupted: interrupted)
    }
}
