import CurlKit
import FetchdConfig
import FetchdPlanner
import FetchdCore
import FetchdHandlers
import FetchdSnapshots
import FetchdState
import FetchdSystemd
import Foundation
import Logging

/// Runs fetches: one at a time per handler, at most `max_concurrent` exec handlers and
/// `http_max_transfers` http fetches (`http_max_host_connections` per host) at once, each under its
/// deadline; turns every outcome into one recorded result and, for new data, a snapshot.
public actor FetchCoordinator {
    /// The configuration in force.
    public internal(set) var config: LoadedConfig
    /// Problems of the last reload, when it was rejected (the previous config stays in force).
    var rejectedReload: [ConfigDiagnostic] = []
    let snapshots: SnapshotStore
    let state: StateStore
    let logger: Logger
    let startedAt = Date()
    /// Slots for exec handlers (programs are costly: `max_concurrent`).
    let limiter: ConcurrencyLimiter
    /// Slots for http fetches, also per host.
    let httpLimiter: ConcurrencyLimiter
    /// The one libcurl multi handle every http fetch and transfer runs on.
    let httpClient: HTTPClient
    /// Slots for background transfers (`transfer_max_active`).
    let transferLimiter: ConcurrencyLimiter
    /// The transfers running now: progress and pause switches.
    let transferBoard = TransferBoard()
    let runner = FetchRunner()
    /// Makes results durable in batches.
    let committer: ResultCommitter
    /// The usage planner's latest decision per learning handler, and when it was made;
    /// dropped when the handler is used or fetched.
    var plans: [String: (decision: FetchPlanner.Decision, floor: Date, madeAt: Date)] = [:]
    /// Handlers a wake has taken and not yet started (they wait for its window of tasks or for a
    /// slot): a wake that begins meanwhile must not take them again, nor count them as overdue.
    /// Without this, a long wake (thousands of due handlers) was joined every half second by
    /// another holding its own copy of them all.
    var takenByWake: Set<String> = []
    /// Handlers whose last attempt is dated after now (the wall clock was stepped back): that
    /// attempt's date, and when this was first seen (`schedulingStates(now:)`).
    var clockStepSeen: [String: (recorded: Date, seenAt: Date)] = [:]
    /// When each handler's latest fetch finished, on the monotonic clock (a wall clock stepped
    /// back would make a fetch hours ago look recent).
    private var finishedAt: [String: ContinuousClock.Instant] = [:]
    /// Handlers running now, with the callers waiting for their result.
    private var running: [String: [CheckedContinuation<FetchRecord, Never>]] = [:]
    /// Handlers whose deferred push a wake has taken and whose fetch has not finished: a second
    /// wake (overlapping, or the tick before the fetch task starts) must not take it again.
    var takenPushes: Set<String> = []
    /// This daemon instance, as the owner of the pushes it admitted to fetch at once: a pending
    /// push owned by another was left by a daemon that stopped before fetching it.
    let instance = UUID().uuidString.lowercased()
    /// The push listener's bound address, once it listens (shown by `fetchctl status`).
    var pushListenerAddress: String?
    /// The machine's power, as last read (`refreshPower()`).
    var power = PowerState()
    /// NetworkManager's view of the network while it is on the system bus; nil: `network_metered` decides.
    var networkManagerState: NetworkState?
    /// Why each deferred handler waits, as last logged.
    var deferredReasons: [String: String] = [:]

    /// Creates a coordinator over opened stores.
    public init(config: LoadedConfig, snapshots: SnapshotStore, state: StateStore, logger: Logger) {
        self.config = config
        self.snapshots = snapshots
        self.state = state
        self.logger = logger
        self.limiter = ConcurrencyLimiter(limit: config.daemon.maxConcurrent)
        self.httpLimiter = ConcurrencyLimiter(limit: config.daemon.httpMaxTransfers,
                                              perKeyLimit: config.daemon.httpMaxHostConnections)
        self.httpClient = HTTPClient(limits: Self.httpLimits(config.daemon))
        self.transferLimiter = ConcurrencyLimiter(limit: config.daemon.transferMaxActive)
        self.committer = ResultCommitter(snapshots: snapshots, state: state, logger: logger)
    }

    /// Whether `name` is running now.
    func isRunning(_ name: String) -> Bool { running[name] != nil }

    /// Whether `name` is running or finished less than `seconds` ago (its own program's file
    /// accesses may still be arriving from inotify).
    func ranRecently(_ name: String, within seconds: Double = 2) -> Bool {
        running[name] != nil || finishedAt[name].map { ContinuousClock.now - $0 < .milliseconds(Int64(seconds * 1000)) } ?? false
    }

    /// libcurl's connection caps, from the same settings as the slots.
    static func httpLimits(_ daemon: DaemonConfig) -> HTTPClient.Limits {
        HTTPClient.Limits(maxConnections: daemon.httpMaxTransfers, maxHostConnections: daemon.httpMaxHostConnections)
    }

    /// Runs every due handler of this wake together (bounded by the slots) and returns
    /// when all have finished. Handlers still running from an earlier wake are skipped.
    /// Returns the records of the fetches it ran.
    @discardableResult
    public func runDue(trigger: FetchTrigger = .timer, now: Date = Date()) async -> [FetchRecord] {
        // Chosen in a synchronous step of its own: a local lives to the end of its scope, and
        // this scope ends with the wake, so the lists of handlers the choice goes through (in a
        // wake of 10,000, three more copies of 10,000 configurations) would stay all wake long.
        guard let wake = takeDue(now: now) else { return [] }
        // A bounded window of tasks, not one per due handler: ten thousand due handlers would
        // otherwise hold ten thousand suspended tasks.
        let window = 2 * (config.daemon.maxConcurrent + config.daemon.httpMaxTransfers)
        return await Self.runWindow(wake.queue, width: window) { handler in
            await self.fetch(handler, trigger: trigger, state: .some(wake.states[handler.name]),
                             deferred: wake.pushes[handler.name]).record
        }
    }

    /// The handlers a wake at `now` runs, in the order it starts them, each taken by the wake;
    /// nil when none is due.
    private func takeDue(now: Date) -> (queue: [HandlerConfig], states: [String: HandlerState], pushes: [String: PendingPush])? {
        let states = schedulingStates(now: now)
        refreshPower()
        let globalUse = globalBudgetUse(now: now)
        let planned = plannedDates(now: now, globalUse: .some(globalUse))
        // Handlers whose conditions (network, power) do not hold are deferred, not skipped: they
        // stay due, and a wake when the conditions change (or the next heartbeat) runs them.
        var eligible = Scheduler.due(config.handlers, states: states, now: now, planned: planned, floors: plannedFloors())
            .filter { running[$0.name] == nil && !takenByWake.contains($0.name) }
        // Partial transfers resume when their retry time has come, whatever their min_interval.
        let resuming = transferResumeDates(states: states, now: now).filter { $0.value <= now }
        let alreadyDue = Set(eligible.map(\.name))
        eligible += config.handlers.filter { resuming[$0.name] != nil && !alreadyDue.contains($0.name) }
        var due = withinGlobalBudget(holdingConditions(eligible), planned: planned, globalUse: globalUse)
        // Deferred pushes whose time has come run as push fetches, with their data.
        let pushes = takeDuePushes(now: now)
        if !pushes.isEmpty {
            let names = Set(due.map(\.name))
            due += config.handlers.filter { pushes[$0.name] != nil && !names.contains($0.name) }
        }
        guard !due.isEmpty else { return nil }
        logger.debug("wake: \(due.count) handler(s) due: \(due.map(\.name).joined(separator: ", "))")
        // Each one is handed to `fetch`, which frees it, even at shutdown (`runDue`'s window
        // drains the queue): none stays taken, and a later wake's taking of it is never undone.
        takenByWake.formUnion(due.map(\.name))
        // Hosts interleaved, so the window never fills with the fetches of one host waiting for
        // that host's slots.
        return (Self.interleavedByHost(due, key: { self.slot(for: $0).1 }), states, pushes)
    }

    /// When the scheduler should wake next. Deferred handlers (conditions unmet) do not count:
    /// they would ask for a wake now, again and again; a change of conditions wakes them.
    public func nextWake(now: Date = Date()) -> Date {
        let states = schedulingStates(now: now)
        let waiting = config.handlers.filter {
            running[$0.name] == nil && !takenByWake.contains($0.name) && unmetConditions($0) == nil
        }
        let wake = Scheduler.nextWake(waiting, states: states, now: now,
                                      heartbeatSeconds: config.daemon.heartbeatSeconds, planned: plannedDates(now: now))
        let resume = transferResumeDates(states: states, now: now)
            .filter { name, _ in config.handler(named: name).map { unmetConditions($0) == nil } ?? false }.values.min()
        return min(wake, nextPushDue() ?? .distantFuture, resume ?? .distantFuture)
    }

    /// Runs `name` now, or joins its fetch if one is running; nil when no such handler is loaded.
    /// A push (`pushData` is its data) never joins: it waits for a running fetch to end and
    /// fetches again, since the running one cannot know what the push announced.
    public func fetch(_ name: String, trigger: FetchTrigger, pushData: String? = nil) async -> FetchRecord? {
        await fetchJoining(name, trigger: trigger, pushData: pushData)?.record
    }

    /// `fetch(_:trigger:pushData:)`, also saying whether the record is that of a fetch already
    /// running when this one came to start (`joined`), decided where the join happens: a caller
    /// that looked before queueing the fetch could be wrong by the time it ran.
    /// `push` is a push admitted to fetch at once (`admitPush`): it runs with its data and is
    /// finished (removed from the database) once its result is recorded.
    public func fetchJoining(_ name: String, trigger: FetchTrigger, pushData: String? = nil,
                             push: PendingPush? = nil) async -> (record: FetchRecord, joined: Bool)? {
        guard let handler = config.handler(named: name) else { return nil }
        return await fetch(handler, trigger: trigger, state: nil, pushData: pushData, deferred: push)
    }

    /// Runs `handler` now, or joins its fetch. `state` is its stored state when the caller has
    /// it at hand (a wake read them all at once; `.some(nil)`: never fetched), nil to read it.
    /// A `deferred` push runs as a push fetch with its data, and is finished (removed from the
    /// database) once its result is recorded, before anything else can see it again.
    private func fetch(_ handler: HandlerConfig, trigger: FetchTrigger, state: HandlerState??,
                       pushData: String? = nil, deferred: PendingPush? = nil) async -> (record: FetchRecord, joined: Bool) {
        let name = handler.name
        takenByWake.remove(name)  // started: `running` covers it from here
        let trigger = deferred == nil ? trigger : .push
        var state = state
        while running[name] != nil {
            let record = await withCheckedContinuation { running[name, default: []].append($0) }
            if trigger != .push { return (record, true) }
            state = nil  // the fetch waited for changed it (validators): read it again
        }
        running[name] = []
        let record = await execute(handler, trigger: trigger, state: state, pushData: deferred?.data ?? pushData)
        if let deferred {
            if deferred.owner != instance { takenPushes.remove(name) }  // a wake took it
            // A fetch stopped by shutdown did not deliver the push: it stays for the next start.
            if !Task.isCancelled { finish(deferred) }
        }
        let waiters = running.removeValue(forKey: name) ?? []
        finishedAt[name] = ContinuousClock.now
        waiters.forEach { $0.resume(returning: record) }
        return (record, false)
    }

    /// One fetch of `handler`, from slot to durable result.
    private func execute(_ handler: HandlerConfig, trigger: FetchTrigger, state: HandlerState??,
                         pushData: String?) async -> FetchRecord {
        if handler.kind == .transfer { return await executeTransfer(handler, trigger: trigger) }
        let record = await runAndCommit(handler, trigger: trigger, state: state, pushData: pushData, daemon: config.daemon)
        plans[handler.name] = nil  // the budget and the content's age changed: plan again
        log(record, snapshot: record.version == nil ? nil : snapshots.latestContentPath(of: handler.name))
        return record
    }

    /// `run`, then the commit of its result: off the actor, which a fetch needs only before and
    /// after. On it, every fetch's folders, links, handler and settling queued behind the
    /// others', and each resumption (a slot granted, the transfer done, the result durable)
    /// had to wait for the actor to be free.
    private nonisolated func runAndCommit(_ handler: HandlerConfig, trigger: FetchTrigger, state: HandlerState??,
                                          pushData: String?, daemon: DaemonConfig) async -> FetchRecord {
        let item = await run(handler, trigger: trigger, state: state, pushData: pushData, daemon: daemon)
        return await committer.commit(item)
    }

    /// Runs `handler` in a slot and turns the outcome into a result to commit. The slot is
    /// given back before the commit, so the next fetches run while this one's result is written.
    /// Touches no actor state: `daemon` is the configuration's, read on the actor.
    private nonisolated func run(_ handler: HandlerConfig, trigger: FetchTrigger, state known: HandlerState??,
                                 pushData: String?, daemon: DaemonConfig) async -> ResultCommitter.Item {
        let (slots, key) = slot(for: handler)
        guard await slots.acquire(key: key) else {
            return Self.item(handler, trigger: trigger, startedAt: Date(),
                             result: .failed(reason: "stopped before it started: fetchd is shutting down"))
        }
        // Time spent waiting for a slot is not the handler's: its deadline starts now.
        let startedAt = Date()
        let outputPath: String
        var userOutputPath: String?
        do throws(DurableFile.Failure) {
            if let user = handler.user { userOutputPath = try snapshots.userStagingPath(for: handler.name, user: user) }
            // An http body is written by fetchd in its future version folder; a program's
            // output is moved into one (it might leave other files beside it).
            outputPath = handler.kind == .http ? try snapshots.versionStagingPath(for: handler.name)
                : snapshots.stagingPath(for: handler.name)
        } catch {
            slots.release(key: key)
            return Self.item(handler, trigger: trigger, startedAt: startedAt,
                             result: .failed(reason: Self.stagingProblem(error, user: handler.user)))
        }
        let deadline = Duration.milliseconds(Int64(handler.deadlineSeconds * 1000))
        let latestPath = snapshots.latestContentPath(of: handler.name)
        let current = snapshots.currentVersion(of: handler.name)
        let latest = handler.kind == .http ? current.flatMap { snapshots.latest(of: handler.name, version: $0) } : nil
        var validators: [String: String] = [:]
        // Validators describe the latest snapshot of this URL; after the URL changes they mean nothing.
        if handler.kind == .http, latest?.details["request_url"] == handler.url,
           let saved: HandlerState = known ?? (try? state.state(of: handler.name)) ?? nil {
            validators[HTTPHandler.etagKey] = saved.etag
            validators[HTTPHandler.lastModifiedKey] = saved.lastModified
        }
        // latest/content is looked for only behind a `latest` link: no failed stat on a first fetch.
        let context = FetchContext(
            handlerName: handler.name, trigger: trigger, outputPath: outputPath,
            previousSnapshotPath: current != nil && access(latestPath, F_OK) == 0 ? latestPath : nil,
            deadline: .now + deadline, wallDeadline: startedAt.addingTimeInterval(handler.deadlineSeconds),
            previousValidators: validators, pushData: pushData, userOutputPath: userOutputPath)
        let implementation = HandlerFactory.make(handler, daemon: daemon, httpClient: httpClient)
        let outcome = await runner.run(implementation, context: context)
        slots.release(key: key)
        if outcome.ignoredCompletions > 0 {
            logger.warning("\(handler.name): ignored \(outcome.ignoredCompletions) extra or late completion(s)",
                           metadata: ["handler": "\(handler.name)"])
        }
        return await Self.settle(handler, outcome: outcome, outputPath: outputPath, trigger: trigger,
                                 startedAt: startedAt, snapshots: snapshots,
                                 knownDigest: outcome.contentDigest.map { ($0.sha256, $0.bytes) },
                                 currentVersion: .some(current))
    }

    /// Which slots `handler` waits for, and under which key: http fetches by host and port.
    nonisolated func slot(for handler: HandlerConfig) -> (ConcurrencyLimiter, String) {
        if handler.kind == .transfer { return (transferLimiter, "") }
        guard handler.kind == .http else { return (limiter, "") }
        return (httpLimiter, handler.url.map(ConnectionKey.of) ?? "")
    }
}
