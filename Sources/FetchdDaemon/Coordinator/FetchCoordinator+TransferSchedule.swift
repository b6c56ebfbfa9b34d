import FetchdConfig
import FetchdState
import Foundation

extension FetchCoordinator {
    /// Transfer handlers with a partial download waiting to resume, not running (or taken by a
    /// wake) now, and when each may resume (`FetchPipeline.resumeDate`). Their `min_interval`
    /// does not hold them back: it spaces whole downloads, not the pieces of one.
    func transferResumeDates(states: [String: HandlerState], now: Date) -> [String: Date] {
        var dates: [String: Date] = [:]
        for handler in config.handlers where handler.kind == .transfer && handler.enabled
            && !isRunning(handler.name) && !isTakenByWake(handler.name) {
            dates[handler.name] = pipeline.resumeDate(of: handler, state: states[handler.name], now: now)
        }
        return dates
    }

    /// Pauses the running transfers whose conditions stopped holding (the network became metered
    /// or went away, AC power was lost); they resume at the first wake after the conditions hold.
    func pauseTransfersWithUnmetConditions() {
        for name in pipeline.transferBoard.names {
            guard let handler = config.handler(named: name), let reason = unmetConditions(handler) else { continue }
            if pipeline.transferBoard.pause(name, reason: reason) {
                logger.info("\(name): pausing the transfer: \(reason)", metadata: ["handler": "\(name)"])
            }
        }
    }
}
