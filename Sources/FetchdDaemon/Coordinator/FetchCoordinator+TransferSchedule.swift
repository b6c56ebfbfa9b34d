import FetchdConfig
import FetchdState
import Foundation

extension FetchCoordinator {
    /// Transfer handlers with a partial download waiting to resume, not running (or taken by a
    /// wake) now, and when each may resume (`TransferLane.resumeDates`).
    func transferResumeDates(states: [String: HandlerState], now: Date) -> [String: Date] {
        let idle = config.handlers.lazy.filter { !self.isRunning($0.name) && !self.isTakenByWake($0.name) }
        return pipeline.transfers.resumeDates(of: idle, states: states, now: now)
    }

    /// Pauses the running transfers whose conditions stopped holding.
    func pauseTransfersWithUnmetConditions() {
        pipeline.transfers.pause { name in config.handler(named: name).flatMap(unmetConditions) }
    }
}
