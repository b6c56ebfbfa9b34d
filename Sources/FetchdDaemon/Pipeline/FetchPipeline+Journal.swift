import FetchdCore
import FetchdSystemd
import Logging

extension FetchPipeline {
    /// Logs a durable result: one journal entry per fetch, with its MESSAGE_ID.
    func log(_ record: CompletedFetch, snapshot: String?, messageID: String? = nil) {
        let result = record.result
        let level: Logger.Level = switch result {
        case .newData, .noData: .info
        case .failed, .expired: .warning
        }
        // The entry's fields are built only when it is written: a wake of a thousand fetches
        // at `log_level = warning` would otherwise build a thousand dictionaries for nothing.
        guard logger.logLevel <= level else { return }
        var metadata: Logger.Metadata = [
            "handler": "\(record.handler)", "result": "\(result.name)", "trigger": "\(record.trigger.rawValue)",
            "duration_ms": "\(record.durationMilliseconds)", "bytes": "\(record.bytes ?? 0)",
            MessageID.metadataKey: "\(messageID ?? (result == .expired ? MessageID.deadlineExpired : MessageID.fetchFinished))",
        ]
        if let reason = result.reason { metadata["reason"] = "\(reason)" }
        if let snapshot { metadata["snapshot"] = "\(snapshot)" }
        if let version = record.version { metadata["version"] = "\(version)" }
        let summary = "\(record.handler): \(result.summary) in \(record.durationMilliseconds) ms (\(record.trigger.rawValue))"
            + (record.version.map { ", snapshot \($0)" } ?? "")
        logger.log(level: level, "\(summary)", metadata: metadata)
    }
}
