import FetchdConfig
import Foundation

extension FetchCoordinator {
    /// Pauses the running transfers whose conditions stopped holding.
    func pauseTransfersWithUnmetConditions() {
        pipeline.transfers.pause { name in config.handler(named: name).flatMap(unmetConditions) }
    }
}
