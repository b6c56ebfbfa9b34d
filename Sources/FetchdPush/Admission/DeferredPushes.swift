import FetchdConfig
import FetchdControl
import Foundation
import Logging

/// What admitting a push made of it.
public struct AdmittedPush: Sendable {
    /// The answer for whoever sent it.
    public var report: PushReport
    /// Within the limit: the push to fetch at once, already on disk, so that a daemon stopped before recording its fetch runs it at its next start.
    public var immediate: PendingPush?
}

/// The pushes as one daemon sees them: each handler's `push_limit` applied as they arrive,
/// the ones over it coalesced into one deferred fetch per handler, taken when due, every
/// admission and problem logged.
///
/// Every push is on disk before it is answered, and stays until its fetch is recorded: a
/// daemon stopped (or killed) in between runs it at its next start.
public struct DeferredPushes: Sendable {
    /// The rate limit's rules and where pushes are kept.
    let ledger: PushLedger
    /// Where admissions and problems are logged.
    let logger: Logger
    /// This daemon's id: the owner of the pushes it admits to fetch at once. A pending push
    /// owned by another was left by a daemon that stopped before fetching it.
    let owner: String
    /// How early, in seconds, a pending push counts as due (the scheduler's tolerance).
    let dueTolerance: Double

    /// The pushes kept in `storage`, for the daemon instance `owner`; `dueTolerance` as the
    /// scheduler's.
    public init(storage: any PushStorage, logger: Logger, owner: String, dueTolerance: Double) {
        self.ledger = PushLedger(storage: storage)
        self.logger = logger
        self.owner = owner
        self.dueTolerance = dueTolerance
    }

    /// Where pushes are kept, for messages.
    private var location: String { ledger.storage.location }

    /// Applies `handler`'s `push_limit` to a push arriving at `now`, durably (on disk before the
    /// caller answers it). Within the limit the caller runs the fetch at once (`immediate`);
    /// over it, the push is coalesced into the handler's one deferred fetch (newest data wins),
    /// which the scheduler runs at the earliest time the limit allows, restarts included.
    public func admit(_ handler: HandlerConfig, data: String?, now: Date) throws(PushRefusal) -> AdmittedPush {
        let name = handler.name
        let limit = handler.pushLimit.description
        let admission: PushAdmission
        do {
            admission = try ledger.admit(of: name, data: data, at: now, limit: handler.pushLimit, owner: owner)
        } catch {
            logger.error("\(name): cannot record a push in \(location): \(error)", metadata: ["handler": "\(name)"])
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

    /// Takes the pending pushes of `handlers` due at `now` (re-read in the transaction that
    /// counts each as a push fetch); by handler. One the limit still has no room for (a reload
    /// lowered it) is moved later. The caller chose handlers that are loaded, not running and
    /// not taken already, whose push this daemon did not admit to fetch at once: those a stopped
    /// daemon admitted are taken like deferred ones (they were counted already).
    public func takeDue(_ handlers: [HandlerConfig], now: Date) -> [String: PendingPush] {
        var taken: [String: PendingPush] = [:]
        for handler in handlers {
            do {
                switch try ledger.takeDue(of: handler.name, at: now, limit: handler.pushLimit, tolerance: dueTolerance) {
                case .run(let due):
                    taken[handler.name] = due
                case .rescheduled(let moved):
                    logger.info("\(handler.name): held push moved to \(moved.dueAt) (push_limit \(handler.pushLimit))")
                case nil: break
                }
            } catch {
                logger.error("\(handler.name): cannot take a deferred push from \(location): \(error)")
            }
        }
        return taken
    }

    /// The deferred pushes a wake may take, by handler (not those this daemon is fetching at once).
    public func waiting() -> [String: PendingPush] {
        Dictionary(pending().filter { $0.owner != owner }.map { ($0.handler, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Every pending push, earliest first (none when the database cannot be read).
    public func pending() -> [PendingPush] {
        do { return try ledger.pending() } catch {
            logger.error("cannot read deferred pushes from \(location): \(error)")
            return []
        }
    }

    /// Removes a push whose fetch is recorded (unless a newer push replaced it).
    public func finish(_ push: PendingPush) {
        do { try ledger.finish(push) } catch {
            logger.error("\(push.handler): cannot clear the deferred push in \(location): \(error); it will run again")
        }
    }
}
