import FetchdConfig
import FetchdCore
import FetchdSnapshots
import FetchdState
import Foundation

extension FetchCoordinator {
    /// Why a registration or its removal did not happen.
    enum RegistrationProblem: Error, Sendable {
        /// The options break the handler rules (`Registration.Refusal`).
        case refused(Registration.Refusal)
        /// The registration would exceed the uid's quotas: each one, as a sentence.
        case quotaExceeded([String])
        /// No such registration.
        case notFound
        /// The state database refused the write; nothing changed.
        case notStored(String)
    }

    /// Registers (or replaces) `registration` for `caller`: checked as a handler file's table
    /// would be, stored durably, then in force at once. Returns the handler's name (`NAME@UID`).
    func register(_ registration: Registration, caller: Registration.Caller, now: Date = Date()) throws(RegistrationProblem) -> String {
        let handler: HandlerConfig
        switch registration.handler(daemon: config.daemon, caller: caller) {
        case .success(let checked): handler = checked
        case .failure(let refusal): throw .refused(refusal)
        }
        let quota = config.daemon.registrationQuota
        if caller == .unprivileged {
            let others = config.registeredHandlers.filter { $0.registeredBy == registration.name.uid && $0.name != handler.name }
            let problems = quota.problems(adding: handler, to: others, heartbeatSeconds: config.daemon.heartbeatSeconds)
            if !problems.isEmpty { throw .quotaExceeded(problems) }
        }
        let row = StoredRegistration(uid: registration.name.uid, name: registration.name.base,
                                     options: registration.storedOptions, registeredAt: now)
        do {
            // The handler count holds root too: registrations are applications'; an
            // administrator's handlers go in files.
            try state.registrations.save(row, limit: quota.handlers)
        } catch let limit as RegistrationTable.LimitReached {
            throw .quotaExceeded(["you have \(limit.limit) handlers registered, the most a uid may (dbus_max_handlers); UnregisterHandler one first"])
        } catch {
            throw .notStored("\(error)")
        }
        install(config.replacingRegistered(with: config.registeredHandlers.filter { $0.name != handler.name } + [handler]))
        plans.forget(handler.name)
        logger.notice("\(handler.name): registered over D-Bus (\(handler.kind.rawValue))", metadata: ["handler": "\(handler.name)"])
        return handler.name
    }

    /// Removes `name`'s registration and its snapshots: now, or when a running fetch of it ends
    /// (`removeSnapshotsIfUnregistered`), since that fetch may still publish.
    func unregister(_ name: RegisteredName) throws(RegistrationProblem) {
        let removed: Bool
        do { removed = try state.registrations.remove(uid: name.uid, name: name.base) } catch {
            throw .notStored("\(error)")
        }
        guard removed else { throw .notFound }
        install(config.replacingRegistered(with: config.registeredHandlers.filter { $0.name != name.qualified }))
        if !isRunning(name.qualified) { snapshots.removeHandler(name.qualified) }
        logger.notice("\(name): unregistered over D-Bus", metadata: ["handler": "\(name)"])
    }

    /// Removes the snapshots of `handler`, a registered handler whose fetch just ended, when it
    /// was unregistered meanwhile (and not registered again).
    func removeSnapshotsIfUnregistered(_ handler: HandlerConfig) {
        guard handler.registeredBy != nil, !isLoaded(handler.name) else { return }
        snapshots.removeHandler(handler.name)
    }

    /// When `uid` may ask for another fetch under `dbus_max_fetches_per_day`: nil when it may
    /// now, else when the oldest of its handlers' fetches of the last 24 hours leaves that
    /// window. Every fetch counts, whatever started it.
    func fetchQuotaFreesAt(of uid: UInt32, now: Date = Date()) -> (used: Int, freesAt: Date)? {
        let limit = config.daemon.registrationQuota.fetchesPerDay
        let names = config.registeredHandlers.filter { $0.registeredBy == uid }.map(\.name)
        let recent = (try? state.attempts(of: names, since: now.addingTimeInterval(-86_400))) ?? []
        guard recent.count >= limit else { return nil }
        let oldest = recent.count > limit ? recent[recent.count - limit] : recent.first
        return (recent.count, (oldest ?? now).addingTimeInterval(86_400))
    }

    /// The names `uid` registered, in name order.
    func registeredNames(of uid: UInt32) -> [String] {
        config.registeredHandlers.filter { $0.registeredBy == uid }.compactMap { RegisteredName(qualified: $0.name)?.base }.sorted()
    }
}
