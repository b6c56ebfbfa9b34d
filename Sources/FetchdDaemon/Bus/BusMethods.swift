#if canImport(Glibc)
import Glibc
#endif
import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdSnapshots
import FetchdSystemd
import Foundation
import Synchronization

/// Carries out the methods of fetchd's D-Bus API against the coordinator: every request gets
/// one reply, a value or a named error (`BusAPI.Failure`). A caller reaches only the handlers
/// its uid registered, by the name it chose; root and `control_group` may name another uid's
/// as `NAME@UID`.
struct BusMethods: Sendable {
    /// The daemon's coordinator.
    let coordinator: FetchCoordinator
    /// What polkit allows, on the system bus.
    let polkit: PolkitAuthority
    /// The handlers a `FetchNow` is starting or waiting on a fetch of.
    private let fetchesAsked = FetchesAsked()
    /// `ReportUse` calls closer together than the usage model's session are one use, recorded
    /// once (as the watchers fold reads and unlocks): each recorded use is a row kept for 60 days
    /// and a plan made again from every use, so 6,000 calls in a loop made each take 40 ms of the
    /// coordinator's time, and the next ones more.
    private let uses = UseFolder()

    init(coordinator: FetchCoordinator, polkit: PolkitAuthority) {
        self.coordinator = coordinator
        self.polkit = polkit
    }

    /// The reply to `request`.
    func perform(_ request: BusRequest) async -> BusReply {
        do throws(BusReplyError) {
            switch request.method {
            case .register(let name, let options):
                guard let registered = RegisteredName(base: name, uid: request.uid) else { throw Self.badName(name) }
                let caller = RegisteredHandlers.caller(uid: request.uid, daemon: await coordinator.config.daemon)
                if caller == .unprivileged { try await polkit.require(BusAPI.Action.registerOwn, request, doing: "register handlers") }
                return .string(try await register(Registration(name: registered, options: options), caller: caller))
            case .unregister(let name):
                let registered = try await resolve(name, request)
                do { try await coordinator.unregister(registered) } catch { throw Self.failure(error, name: name) }
                return .empty
            case .list:
                return .strings(await coordinator.registeredNames(of: request.uid))
            case .get(let name):
                let registered = try await loaded(name, request)
                guard let status = await coordinator.status(of: registered.qualified)?.handlers.first else {
                    throw BusAPI.Failure.notFound(name)
                }
                return .dictionary(Self.entries(of: status))
            case .getObject(let name):
                return .objectPath(HandlerObjects.path(of: try await loaded(name, request)))
            case .reportUse(let name):
                let registered = try await loaded(name, request)
                if uses.startsSession(registered.qualified, at: Date()) {
                    _ = await coordinator.recordUse(registered.qualified, source: .explicit)
                }
                return .empty
            case .fetchNow(let name):
                let registered = try await loaded(name, request)
                try await checkFetchQuota(of: registered.uid, request)
                // The reply says the fetch started; its result comes with FetchCompleted (a D-Bus
                // call times out after 25 s, and a fetch's deadline may be longer). One task per
                // handler: a FetchNow while one is under way joins it here, as it would join the
                // fetch, instead of leaving a task waiting in memory until the fetch ends (20,000
                // calls during a long fetch held 200 MB).
                let qualified = registered.qualified
                guard fetchesAsked.claim(qualified) else { return .empty }
                Task { [coordinator, fetchesAsked] in
                    _ = await coordinator.fetch(qualified, trigger: .manual)
                    fetchesAsked.release(qualified)
                }
                return .empty
            case .openSnapshot(let name):
                let registered = try await loaded(name, request)
                return try open(registered, asked: name)
            }
        } catch {
            return .error(error)
        }
    }

    private func register(_ registration: Registration, caller: Registration.Caller) async throws(BusReplyError) -> String {
        do {
            return try await coordinator.register(registration, caller: caller)
        } catch {
            throw Self.failure(error, name: registration.name.base)
        }
    }

    /// The registration `name` means for this caller: its own by the name it chose, or, for
    /// root, `control_group` and whom polkit's `manage-all` admits (system bus), any uid's as
    /// `NAME@UID`. Whether the caller is privileged is asked only for another uid's name: it
    /// reads the user database.
    private func resolve(_ name: String, _ request: BusRequest) async throws(BusReplyError) -> RegisteredName {
        if let qualified = RegisteredName(qualified: name) {
            let daemon = await coordinator.config.daemon
            if qualified.uid != request.uid, RegisteredHandlers.caller(uid: request.uid, daemon: daemon) != .privileged {
                // On the system bus polkit may let an administrator in; elsewhere nobody else.
                guard polkit.decides else {
                    throw BusAPI.Failure.notPermitted("\(BusAPI.Failure.quoted(name)) belongs to uid \(qualified.uid); only root and the control group may reach another uid's handlers")
                }
                try await polkit.require(BusAPI.Action.manageAll, request, doing: "reach \(BusAPI.Failure.quoted(name)), a handler of uid \(qualified.uid)")
            }
            return qualified
        }
        guard let own = RegisteredName(base: name, uid: request.uid) else { throw Self.badName(name) }
        return own
    }

    /// `resolve`, for a handler that must be in force.
    private func loaded(_ name: String, _ request: BusRequest) async throws(BusReplyError) -> RegisteredName {
        let registered = try await resolve(name, request)
        guard await coordinator.config.handler(named: registered.qualified) != nil else { throw BusAPI.Failure.notFound(name) }
        return registered
    }

    /// Refuses a fetch an unprivileged caller asks for once its uid's handlers fetched
    /// `dbus_max_fetches_per_day` times in the last 24 hours.
    private func checkFetchQuota(of uid: UInt32, _ request: BusRequest) async throws(BusReplyError) {
        let daemon = await coordinator.config.daemon
        guard RegisteredHandlers.caller(uid: request.uid, daemon: daemon) == .unprivileged,
              let (used, freesAt) = await coordinator.fetchQuotaFreesAt(of: uid) else { return }
        throw BusAPI.Failure.quotaExceeded(
            "your handlers fetched \(used) times in the last 24 hours, the most a uid may (dbus_max_fetches_per_day = \(daemon.registrationQuota.fetchesPerDay)); the next fetch may be asked for at \(freesAt.formatted(.iso8601))")
    }

    /// The descriptor of `name`'s newest content, read-only, and its metadata: the version
    /// `latest` names is read once, and both come from that version's folder, so they agree
    /// even when a fetch publishes meanwhile.
    private func open(_ name: RegisteredName, asked: String) throws(BusReplyError) -> BusReply {
        let snapshots = coordinator.snapshots
        guard let version = snapshots.currentVersion(of: name.qualified),
              let metadata = snapshots.metadata(of: name.qualified, version: version) else {
            throw BusAPI.Failure.noSnapshot(asked)
        }
        let path = snapshots.layout.contentPath(of: name.qualified, version: version)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY)
        guard fd >= 0 else {
            // Evicted or replaced between the two reads: as if there were none yet.
            if errno == ENOENT { throw BusAPI.Failure.noSnapshot(asked) }
            throw BusAPI.Failure.failed("cannot open the snapshot of \(BusAPI.Failure.quoted(asked)): \(String(cString: strerror(errno)))")
        }
        var entries: [BusEntry] = [
            BusEntry("version", .string(metadata.version)),
            BusEntry("fetched_at", .uint64(Self.microseconds(metadata.fetchedAt))),
            BusEntry("bytes", .uint64(UInt64(max(0, metadata.bytes)))),
            BusEntry("sha256", .string(metadata.sha256)),
        ]
        if let type = metadata.contentType { entries.append(BusEntry("content_type", .string(type))) }
        for key in ["etag", "last_modified"] {
            if let value = metadata.details[key], !value.isEmpty { entries.append(BusEntry(key, .string(value))) }
        }
        return .descriptor(fd, entries)
    }

    /// A handler's status as `GetHandler` returns it: times in microseconds since 1970 (as
    /// systemd's D-Bus API gives them), absent when unknown.
    static func entries(of status: HandlerStatus) -> [BusEntry] {
        var entries: [BusEntry] = [
            BusEntry("kind", .string(status.kind)),
            BusEntry("enabled", .bool(status.enabled)),
            BusEntry("running", .bool(status.running)),
            BusEntry("consecutive_failures", .uint64(UInt64(max(0, status.consecutiveFailures)))),
        ]
        if let result = status.lastResult { entries.append(BusEntry("last_result", .string(result))) }
        if let reason = status.lastReason { entries.append(BusEntry("last_reason", .string(reason))) }
        let times: [(String, Date?)] = [("last_attempt_at", status.lastAttemptAt), ("last_success_at", status.lastSuccessAt),
                                        ("next_eligible_at", status.nextEligibleAt)]
        for (key, date) in times { if let date { entries.append(BusEntry(key, .uint64(microseconds(date)))) } }
        if let reason = status.planReason { entries.append(BusEntry("plan_reason", .string(reason))) }
        if let waiting = status.waitingFor { entries.append(BusEntry("waiting_for", .string(waiting))) }
        if let holds = status.holds, !holds.isEmpty {
            entries.append(BusEntry("holds", .strings(holds.map { "\($0.cause.rawValue): \($0.detail)" })))
        }
        return entries
    }

    /// `date` in microseconds since 1970, as systemd's D-Bus API gives times.
    static func microseconds(_ date: Date) -> UInt64 {
        UInt64(max(0, (date.timeIntervalSince1970 * 1_000_000).rounded()))
    }

    private static func badName(_ name: String) -> BusReplyError {
        BusAPI.Failure.invalidArguments("\(BusAPI.Failure.quoted(name)) is not a handler name: \(HandlerName.problem(with: name) ?? "it is not valid")")
    }

    private static func failure(_ problem: FetchCoordinator.RegistrationProblem, name: String) -> BusReplyError {
        switch problem {
        case .refused(let refusal): BusAPI.Failure.invalidArguments(refusal.message)
        case .quotaExceeded(let problems): BusAPI.Failure.quotaExceeded(problems.joined(separator: "\n"))
        case .notFound: BusAPI.Failure.notFound(name)
        case .notStored(let reason): BusAPI.Failure.failed("fetchd could not store the change (\(reason)); nothing changed, try again")
        }
    }
}

/// The handlers a `FetchNow` task is under way for, at most one each.
private final class FetchesAsked: Sendable {
    private let names = Mutex(Set<String>())

    /// Takes `name`; false when a task has it already.
    func claim(_ name: String) -> Bool { names.withLock { $0.insert(name).inserted } }

    /// Gives `name` back once its task is done.
    func release(_ name: String) { names.withLock { _ = $0.remove(name) } }
}
