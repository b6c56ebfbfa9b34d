import CurlKit
import FetchdControl
import Foundation
import Synchronization

/// The background transfers running now: their live progress for `fetchctl status`, and the
/// switch that pauses each one. Shared by the coordinator and the transfers' own tasks, which
/// report progress without hopping onto the coordinator actor.
final class TransferBoard: Sendable {
    private struct Entry {
        let pause: PauseSwitch
        let startedAt: ContinuousClock.Instant
        var progress: TransferProgress?
        /// Bytes on disk when this run's download began (its rate counts only what came since).
        var bytesAtStart = 0
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// Registers a transfer that is starting; returns its pause switch.
    func begin(_ name: String) -> PauseSwitch {
        let pause = PauseSwitch()
        entries.withLock { $0[name] = Entry(pause: pause, startedAt: .now) }
        return pause
    }

    /// Attaches an attempt's live progress.
    func attach(_ name: String, progress: TransferProgress) {
        entries.withLock {
            $0[name]?.progress = progress
            $0[name]?.bytesAtStart = progress.bytesOnDisk
        }
    }

    /// Forgets a transfer that ended.
    func end(_ name: String) { _ = entries.withLock { $0.removeValue(forKey: name) } }

    /// How many transfers are running.
    var count: Int { entries.withLock { $0.count } }

    /// Names of the running transfers.
    var names: [String] { entries.withLock { Array($0.keys) } }

    /// Pauses `name` for `reason`; false when it is not running.
    @discardableResult
    func pause(_ name: String, reason: String) -> Bool {
        guard let pause = entries.withLock({ $0[name]?.pause }) else { return false }
        pause.flip(reason: reason)
        return true
    }

    /// Live progress of `name`, when it is running.
    func status(of name: String) -> TransferStatus? {
        guard let entry = entries.withLock({ $0[name] }) else { return nil }
        let bytes = entry.progress?.bytesOnDisk ?? 0
        let total = entry.progress?.totalBytes
        let elapsedSeconds = Double((ContinuousClock.now - entry.startedAt) / .milliseconds(1)) / 1000
        let rate = elapsedSeconds > 0.5 ? Int(Double(bytes - entry.bytesAtStart) / elapsedSeconds) : nil
        var status = TransferStatus(state: .running, bytes: bytes, totalBytes: total)
        status.bytesPerSecond = rate
        if let total, let rate, rate > 0 { status.etaSeconds = max(0, total - bytes) / rate }
        return status
    }
}

/// A one-shot switch a running transfer waits on: flipping it pauses the transfer.
final class PauseSwitch: Sendable {
    private struct State {
        var reason: String?
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    /// Why the transfer was paused, once it was.
    var reason: String? { state.withLock { $0.reason } }

    /// Pauses (the first reason wins).
    func flip(reason: String) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.reason == nil else { return nil }
            state.reason = reason
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns once flipped, or when the calling task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.reason != nil || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
