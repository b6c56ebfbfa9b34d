import FetchdCore
import FetchdState
import FetchdSystemd
import Logging

extension FetchCoordinator {
    /// Logs a durable result: one journal entry per fetch, with its MESSAGE_ID.
    func log(_ record: FetchRecord, snapshot: String?, messageID: String? = nil) {
        let result = record.fetchResult ?? .failed(reason: record.reason ?? record.result)
        var metadata: Logger.Metadata = [
            "handler": "\(record.handler)", "result": "\(result.name)", "trigger": "\(record.trigger)",
            "duration_ms": "\(record.durationMilliseconds)", "bytes": "\(record.bytes ?? 0)",
            MessageID.metadataKey: "\(messageID ?? (result == .expired ? MessageID.deadlineExpired : MessageID.fetchFinished))",
        ]
        if let reason = result.reason { metadata["reason"] = "\(reason)" }
        if let snapshot { metadata["snapshot"] = "\(snapshot)" }
        let summary = "\(record.handler): \(result.summary) in \(record.durationMilliseconds) ms (\(record.trigger))"
            + (record.version.map { ", snapshot \($0)" } ?? "")
        switch result {
        case .newData, .noData: logger.info("\(summary)", metadata: metadata)
        case .failed, .expired: logger.warning("\(summary)", metadata: metadata)
        }
    }
}
