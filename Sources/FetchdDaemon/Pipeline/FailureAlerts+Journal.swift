import FetchdCore
import FetchdHandlers
import FetchdSystemd
import Logging

extension FailureAlerts {
    /// Journals `alert` of `handler` with its MESSAGE_ID and fields (`FETCHD_ALERT`,
    /// `FETCHD_RESULT`, `FETCHD_FAILURES`, ...); `program` says whether its program runs.
    func journal(_ alert: FailureAlert, of handler: String, program: String) {
        var metadata: Logger.Metadata = [
            "handler": "\(handler)", "alert": "\(alert.event.rawValue)", "result": "\(alert.result)",
            "failures": "\(alert.failures)", "alert_program": "\(program)",
        ]
        if let reason = alert.reason, !reason.isEmpty { metadata["reason"] = "\(reason)" }
        if let lastSuccess = alert.lastSuccess { metadata["last_success"] = "\(lastSuccess)" }
        switch alert.event {
        case .failing:
            metadata[MessageID.metadataKey] = "\(MessageID.handlerFailing)"
            let reason = alert.reason.map { ": \($0)" } ?? ""
            logger.warning("\(handler): failing: \(alert.failures) failures in a row (\(alert.result)\(reason)); alert program \(program)",
                           metadata: metadata)
        case .recovered:
            metadata[MessageID.metadataKey] = "\(MessageID.handlerRecovered)"
            logger.notice("\(handler): recovered (\(alert.result)) after \(alert.failures) failures in a row; alert program \(program)",
                          metadata: metadata)
        }
    }

    /// Logs how an alert program of `handler` ended.
    static func log(_ outcome: FetchRunner.Outcome, of handler: String, event: FailureAlert.Event, seconds: Double,
                    logger: Logger) {
        let metadata: Logger.Metadata = ["handler": "\(handler)", "alert": "\(event.rawValue)"]
        switch outcome.completion {
        case .newData?, .noData?:
            logger.info("\(handler): on_failure (\(event.rawValue)) finished", metadata: metadata)
        case .failed(let reason, _)?:
            logger.warning("\(handler): on_failure (\(event.rawValue)) failed: \(reason)", metadata: metadata)
        case nil:
            let why = outcome.interrupted ? "stopped: fetchd is stopping"
                : "ran past its deadline (\(HumanDuration.format(seconds: seconds))) and was stopped"
            logger.warning("\(handler): on_failure (\(event.rawValue)) \(why)", metadata: metadata)
        }
    }
}
