import FetchdConfig
import FetchdControl
import FetchdHandlers
import FetchdState
import Foundation

extension FetchPipeline {
    /// When `handler`'s partial transfer may resume; nil without one. At once after a pause or
    /// a restart, after a failure with an exponential delay (`retryDelaySeconds`), never
    /// before the server's Retry-After.
    func resumeDate(of handler: HandlerConfig, state: HandlerState?, now: Date) -> Date? {
        guard FileManager.default.fileExists(atPath: transferFiles(of: handler.name).record) else { return nil }
        let lastAttempt = Scheduler.lastAttempt(state, now: now) ?? .distantPast
        let date = lastAttempt.addingTimeInterval(Self.retryDelaySeconds(failures: state?.consecutiveFailures ?? 0))
        return max(date, Scheduler.serverFloor(of: handler, state: state, now: now) ?? .distantPast)
    }

    /// The wait before resuming a transfer after `failures` failures in a row: 30 s doubling
    /// to an hour.
    static func retryDelaySeconds(failures: Int) -> Double {
        failures == 0 ? 0 : min(3600, 30 * pow(2, Double(min(failures, 20) - 1)))
    }

    /// A transfer handler's download in progress or waiting to resume, for `fetchctl status`.
    func transferStatus(of handler: HandlerConfig, state: HandlerState?) -> TransferStatus? {
        guard handler.kind == .transfer else { return nil }
        if let live = transferBoard.status(of: handler.name) { return live }
        let files = transferFiles(of: handler.name)
        guard let record = TransferResumeRecord.read(from: files.record) else { return nil }
        var status = TransferStatus(state: .partial, bytes: BackgroundTransfer.size(of: files.partial),
                                    totalBytes: record.totalBytes)
        status.resumesAt = resumeDate(of: handler, state: state, now: Date())
        return status
    }
}
