import FetchdCore
import Foundation

/// What the coordinator knows of one handler beyond its configuration and its stored state:
/// whether it runs, who waits for it, what it waits for. Lost at a restart, by
/// design: all of it is rebuilt from the database, or is about fetches of this process.
struct HandlerRuntime {
    /// The callers waiting for the running fetch's record; nil while it does not run.
    var waiters: [CheckedContinuation<CompletedFetch, Never>]?
    /// Taken by a wake and not yet started (it waits for the wake's window of tasks or for a
    /// slot): a wake that begins meanwhile must not take it again, nor count it as overdue.
    /// Without this, a long wake (thousands of due handlers) was joined every half second by
    /// another holding its own copy of them all.
    var takenByWake = false
    /// The wake's batch of http fetches it belongs to, and its place there, until its record
    /// comes back: a fetch asked for meanwhile takes it over if the batch has not started it.
    var inBatch: (batch: HTTPBatch, index: Int)?
    /// Its deferred push was taken by a wake and the fetch has not finished: a second wake
    /// (overlapping, or the tick before the fetch task starts) must not take it again.
    var pushTaken = false
    /// When its latest fetch finished, on the monotonic clock (a wall clock stepped back would
    /// make a fetch hours ago look recent).
    var finishedAt: ContinuousClock.Instant?
    /// Its last attempt is dated after now (the wall clock was stepped back): that attempt's
    /// date, and when this was first seen (`schedulingView(of:now:)`).
    var clockStep: (recorded: Date, seenAt: Date)?

    /// Whether a fetch of it runs now.
    var isRunning: Bool { waiters != nil }

    /// Whether it runs now or finished less than `seconds` ago (its own program's file accesses
    /// may still be arriving from inotify).
    func ranRecently(within seconds: Double) -> Bool {
        isRunning || finishedAt.map { ContinuousClock.now - $0 < .milliseconds(Int64(seconds * 1000)) } ?? false
    }

    /// Whether a fetch, a wake or a push still counts on this entry: one that does not may go
    /// when its handler is no longer configured.
    var isBusy: Bool { waiters != nil || takenByWake || pushTaken }
}
