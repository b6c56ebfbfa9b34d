import FetchdClock
import FetchdCore
import Foundation

extension FetchRunner {
    /// `run` for a handler that stops itself when its context expires: it runs in the caller's
    /// task, and the deadline is an action on the shared timer that expires the context (which
    /// runs the handler's expiration callbacks: the http handler's ends its transfer).
    ///
    /// Why: the general path costs two child tasks per fetch (the handler and its deadline),
    /// each created, scheduled, and woken again on Swift's pool, and the deadline's sleep
    /// cancelled when the handler completes; on Linux every such hop is a few microseconds, and
    /// a wake of a thousand fetches paid for them all. The contract is the same: the result is
    /// `expired` at the deadline, the run returns only after the handler has returned, and a
    /// completion that comes from elsewhere after the handler returned still counts until the
    /// deadline.
    func runInline(_ handler: any FetchHandler, context: FetchContext) async -> Outcome {
        let timer = DeadlineTimer.shared
        let alarm = timer.schedule(at: context.deadline) {
            if context.expire() { context.releaseWaiter() }
        }
        await handler.performFetch(context: context)
        var interrupted = false
        if context.completion == nil && !context.isExpired {
            if !Task.isCancelled {
                // Returned without completing: a completion may still come from elsewhere until
                // the deadline (the alarm releases this wait), or the task may be cancelled.
                await withTaskCancellationHandler {
                    await context.waitForCompletion()
                } onCancel: {
                    context.releaseWaiter()
                }
            }
            // Shutdown stopped the handler (or this wait) before the deadline: take the
            // expiration path, as the general runner does.
            if context.completion == nil && !context.isExpired && Task.isCancelled {
                interrupted = context.expire()
            }
        }
        timer.cancelScheduled(alarm)
        context.releaseWaiter()
        return Outcome(of: context, interrupted: interrupted)
    }
}
