import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdState
import Foundation

extension FetchCoordinator {
    /// What `admitPush` made of a push.
    public struct AdmittedPush: Sendable {
        /// The answer for whoever sent it.
        public var report: PushReport
        /// Within the limit: the push to fetch at once (`fetchJoining(_:trigger:push:)`), already
        /// on disk, so that a daemon stopped before recording its fetch runs it at its next start.
        public var immediate: PendingPush?
    }

    /// Applies `name`'s `push_limit` to a push arriving at `now`, durably (on disk before the
    /// caller answers it). Within the limit the caller runs the fetch at once (`immediate`);
    /// over it, the push is coalesced into the handler's one deferred fetch (newest data wins),
    /// which the scheduler runs at the earliest time the limit allows, restarts included.
    public func admitPush(_ name: String, data: String?, now: Date = Date()) throws(PushRefusal) -> AdmittedPush {
        guard let handler = config.handler(named: name) else { throw .unknownHandler(name) }
        let limit = handler.pushLimit.description
        let admission: PushAdmission
        do {
            admission = try state.admitPush(of: name, data: data, at: now, limit: handler.pushLimit, owner: instance)
        } catch {
            logger.error("\(name): cannot record a push in \(state.path): \(error)", metadata: ["handler": "\(name)"])
            throw .stateUnavailable("\(error)")
        }
        switch admission {
        case .now(let pending):
            logger.debug("\(name): push accepted", metadata: ["handler": "\(name)"])
            return AdmittedPush(report: .now(handler: name, limit: limit), immediate: pending)
        case .deferred(let pending):
            let report = PushReport.coalesced(handler: name, limit: limit, fetchAt: pending.dueAt, pushes: pending.pushes)
            logger.info("\(name): push \(report.message)", metadata: ["handler": "\(name)", "trigger": "push"])
            return AdmittedPush(report: report, immediate: nil)
        }
    }

    /// Takes the deferred pushes due at `now` of loaded handlers that are not running, counting
    /// each as a push fetch; by handler. One the limit still has no room for is moved later.
    /// Pushes this daemon admitted to fetch at once are its intake's to run, not a wake's; those
    /// a stopped daemon admitted are taken like deferred ones (they were counted already).
    func takeDuePushes(now: Date) -> [String: PendingPush] {
        var taken: [String: PendingPush] = [:]
        for push in pendingPushes() where push.dueAt <= now.addingTimeInterval(Scheduler.dueTolerance) && push.owner != instance {
            guard let handler = config.handler(named: push.handler), !isRunning(push.handler),
                  !takenPushes.contains(push.handler) else { continue }
            do {
                switch try state.takeDuePush(of: push.handler, at: now, limit: handler.pushLimit,
                                             tolerance: Scheduler.dueTolerance) {
                case .run(let due):
                    taken[push.handler] = due
                    takenPushes.insert(push.handler)
                case .rescheduled(let moved):
                    logger.info("\(push.handler): deferred push moved to \(moved.dueAt) (push_limit \(handler.pushLimit))")
                case nil: break
                }
            } catch {
                logger.error("\(push.handler): cannot take a deferred push from \(state.path): \(error)")
            }
        }
        return taken
    }

    /// When the earliest deferred push of a loaded handler that is not running is due: the
    /// scheduler wakes for it.
    func nextPushDue() -> Date? {
        pendingPushes().first {
            $0.owner != instance && config.handler(named: $0.handler) != nil && !isRunning($0.handler) && !takenPushes.contains($0.handler)
        }?.dueAt
    }

    /// Every deferred push, earliest first (none when the database cannot be read).
    func pendingPushes() -> [PendingPush] {
        do { return try state.pendingPushes() } catch {
            logger.error("cannot read deferred pushes from \(state.path): \(error)")
            return []
        }
    }

    /// Removes a deferred push whose fetch is recorded (unless a newer push replaced it).
    func finish(_ push: PendingPush) {
        do { try state.finishPush(push) } catch {
            logger.error("\(push.handler): cannot clear the deferred push in \(state.path): \(error); it will run again")
        }
    }

    /// Records where the push listener listens, once it is bound.
    func setPushListenerAddress(_ address: String?) { pushListenerAddress = address }

    /// The bearer token the push listener accepts for `name`: nil when no such handler is loaded
    /// or it has no `push_token_file` (both answered alike). Read per request, so a reload's
    /// tokens take effect at once.
    func pushToken(of name: String) -> String? {
        config.handler(named: name)?.pushToken
    }
}
