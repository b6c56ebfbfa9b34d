import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdHandlers
import FetchdState
import Foundation

extension FetchCoordinator {
    /// Transfer handlers with a partial download waiting to resume, not running (or taken by a
    /// wake) now, and when each may resume: at once after a pause or a restart, after a failure
    /// with an exponential delay
    /// (`transferRetryDelaySeconds`), never before the server's Retry-After. Their `min_interval`
    /// does not hold them back: it spaces whole downloads, not the pieces of one.
    func transferResumeDates(states: [String: HandlerState], now: Date) -> [String: Date] {
        var dates: [String: Date] = [:]
        for handler in config.handlers where handler.kind == .transfer && handler.enabled
            && !isRunning(handler.name) && !takenByWake.contains(handler.name) {
            dates[handler.name] = transferResumeDate(of: handler, state: states[handler.name], now: now)
        }
        return dates
    }

    /// When `handler`'s partial transfer may resume (see `transferResumeDates`); nil without one.
    func transferResumeDate(of handler: HandlerConfig, state: HandlerState?, now: Date) -> Date? {
        guard FileManager.default.fileExists(atPath: transferFiles(of: handler.name).record) else { return nil }
        let lastAttempt = min(state?.lastAttemptAt ?? .distantPast, now)
        let date = lastAttempt.addingTimeInterval(Self.transferRetryDelaySeconds(failures: state?.consecutiveFailures ?? 0))
        guard handler.honorServerHints, let notBefore = state?.notBefore else { return date }
        return max(date, notBefore)
    }

    /// The wait before resuming after `failures` failures in a row: 30 s doubling to an hour.
    static func transferRetryDelaySeconds(failures: Int) -> Double {
        failures == 0 ? 0 : min(3600, 30 * pow(2, Double(min(failures, 20) - 1)))
    }

    /// Where `name`'s transfer keeps its partial download (the folder may not exist yet).
    nonisolated func transferFiles(of name: String) -> BackgroundTransfer.Files {
        BackgroundTransfer.Files(directory: snapshots.transferDirectory(of: name))
    }

    /// Pauses the running transfers whose conditions stopped holding (the network became metered
    /// or went away, AC power was lost); they resume at the first wake after the conditions hold.
    func pauseTransfersWithUnmetConditions() {
        for name in transferBoard.names {
            guard let handler = config.handler(named: name), let reason = unmetConditions(handler) else { continue }
            if transferBoard.pause(name, reason: reason) {
                logger.info("\(name): pausing the transfer: \(reason)", metadata: ["handler": "\(name)"])
            }
        }
    }

    /// A transfer handler's download in progress or waiting to resume, for `fetchctl status`.
    func transferStatus(of handler: HandlerConfig, state: HandlerState?) -> TransferStatus? {
        guard handler.kind == .transfer else { return nil }
        if let live = transferBoard.status(of: handler.name) { return live }
        let files = transferFiles(of: handler.name)
        guard let record = TransferResumeRecord.read(from: files.record) else { return nil }
        var status = TransferStatus(state: .partial, bytes: BackgroundTransfer.size(of: files.partial),
                                    totalBytes: record.totalBytes)
        status.resumesAt = transferResumeDate(of: handler, state: state, now: Date())
        return status
    }
}
