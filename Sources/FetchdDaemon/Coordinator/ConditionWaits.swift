import FetchdSystemd
import Foundation
import Logging

/// The handlers whose fetch waits for its conditions (network, power, battery), each with the
/// reason last logged: a wait is logged once when it begins and once when it ends, not at
/// every wake it lasts through.
struct ConditionWaits {
    /// The reason each waiting handler's wait was logged with, by name.
    private var reasons: [String: String] = [:]

    /// Logs the waits a wake found (`Eligibility.deferred`: due, conditions unmet; they stay
    /// due and run at the first wake after their conditions hold) that are new or have a new
    /// reason, and the end of each wait whose handler the wake starts (`Eligibility.ready`).
    mutating func note(_ eligibility: Eligibility, logger: Logger) {
        let handlers = eligibility.input.handlers
        for (index, reason) in eligibility.deferred {
            let name = handlers[index].name
            guard reasons.updateValue(reason, forKey: name) != reason else { continue }
            logger.info("\(name): \(reason)",
                        metadata: ["handler": "\(name)", MessageID.metadataKey: "\(MessageID.conditionWait)"])
        }
        for index in eligibility.ready {
            let name = handlers[index].name
            guard reasons.removeValue(forKey: name) != nil else { continue }
            logger.info("\(name): conditions hold again: fetching", metadata: ["handler": "\(name)"])
        }
    }

    /// Records that `name` (a transfer its conditions paused) waits for `reason`, already logged
    /// by whoever paused it.
    mutating func paused(_ name: String, because reason: String) {
        reasons[name] = reason
    }

    /// Forgets the handlers no longer configured.
    mutating func keep(only names: Set<String>) {
        reasons = reasons.filter { names.contains($0.key) }
    }
}
