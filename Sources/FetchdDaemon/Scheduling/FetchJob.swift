import FetchdCore
import FetchdPush

/// A fetch someone asked for (`fetchctl fetch`, a push within its limit), queued to the wake
/// clock so it runs in the clock's task group and outlives the request that started it.
struct FetchJob: Sendable {
    /// The handler to fetch.
    let handler: String
    /// What asked for it.
    let trigger: FetchTrigger
    /// For a push admitted to fetch at once: the push (its data goes to the handler), finished
    /// once the fetch is recorded.
    var push: PendingPush? = nil
    /// Called when the fetch has finished (nil when nobody waits) with its record (nil when it
    /// did not run) and whether that is the record of a fetch that was already running.
    let onFinish: (@Sendable (_ record: CompletedFetch?, _ joined: Bool) -> Void)?
}
