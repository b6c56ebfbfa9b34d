import FetchdControl
import FetchdCore
import FetchdPush
import Foundation

/// The one way a push enters the daemon, from the control socket (`fetchctl push`) or the push
/// listener: the data is checked, the handler's `push_limit` applied, and a push within the
/// limit is queued to the wake clock as a fetch with trigger `push`.
struct PushIntake: PushSink {
    /// Applies the limits and keeps the deferred pushes.
    let queue: any PushQueue
    /// Runs the fetches of pushes within the limit.
    let clock: WakeClock

    /// Takes a push of `name` carrying `data` (empty: none); the report says whether it fetches
    /// now or was coalesced into the handler's deferred fetch, and when that runs.
    func push(_ name: String, data: [UInt8]) async throws(PushRefusal) -> PushReport {
        let text: String?
        do { text = try PushData.validate(data) } catch { throw .badData(error) }
        // Checked before the push is counted. Once admitted the push is on disk until its fetch is
        // recorded: a stop (or a SIGKILL) before then leaves it for the next start to run.
        guard clock.acceptsJobs else { throw .shuttingDown }
        let admitted = try await queue.admitPush(name, data: text, now: Date())
        if let immediate = admitted.immediate {
            clock.submit(FetchJob(handler: name, trigger: .push, push: immediate, onFinish: nil))
        } else {
            clock.replan()  // the deferred fetch may be due before the next planned wake
        }
        return admitted.report
    }

    /// `name`'s push token, nil when it has none or is not loaded.
    func pushToken(of name: String) async -> String? {
        await queue.pushToken(of: name)
    }

    /// Kept for `fetchctl status`.
    func listenerAddressChanged(_ address: String?) async {
        await queue.setPushListenerAddress(address)
    }
}
