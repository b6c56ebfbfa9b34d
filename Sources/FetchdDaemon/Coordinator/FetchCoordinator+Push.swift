import FetchdControl
import FetchdPush
import Foundation

extension FetchCoordinator {
    /// The pushes kept in the database, as this daemon sees them.
    var pushes: DeferredPushes {
        DeferredPushes(storage: StatePushStorage(state: state), logger: logger, owner: instance.id,
                       dueTolerance: Scheduler.dueTolerance)
    }

    /// Applies `name`'s `push_limit` to a push arriving at `now` (`DeferredPushes.admit`).
    public func admitPush(_ name: String, data: String?, now: Date = Date()) throws(PushRefusal) -> AdmittedPush {
        guard let handler = config.handler(named: name) else { throw .unknownHandler(name) }
        return try pushes.admit(handler, data: data, now: now)
    }

    /// Takes the deferred pushes of `names` (`Eligibility.pushesDue`) that are still due at
    /// `now`, each counted as a push fetch and marked taken until its fetch ends; by handler.
    func takePushes(_ names: [String], now: Date) -> [String: PendingPush] {
        let taken = pushes.takeDue(names.compactMap(config.handler(named:)), now: now)
        for name in taken.keys { runtime[name, default: HandlerRuntime()].pushTaken = true }
        return taken
    }

    /// Records where the push listener listens, once it is bound.
    func setPushListenerAddress(_ address: String?) { instance.pushListenerAddress = address }

    /// The bearer token the push listener accepts for `name`: nil when no such handler is loaded
    /// or it has no `push_token_file` (both answered alike). Read per request, so a reload's
    /// tokens take effect at once.
    func pushToken(of name: String) -> String? {
        config.handler(named: name)?.pushToken
    }
}
