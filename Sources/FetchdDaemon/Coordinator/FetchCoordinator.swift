import FetchdConfig
import FetchdCore
import FetchdHandlers
import FetchdPush
import FetchdSnapshots
import FetchdState
import Foundation
import Logging

/// Decides what runs and when: one fetch at a time per handler, each wake's due handlers
/// (`runDue`), fetches asked for (`fetch`), pushes, uses and the conditions they wait for. The
/// fetches themselves run in the `FetchPipeline`, off this actor: it is needed only to start a
/// fetch and to take its record.
public actor FetchCoordinator {
    /// The configuration in force.
    public internal(set) var config: LoadedConfig
    /// Problems of the last reload, when it was rejected (the previous config stays in force).
    var rejectedReload: [ConfigDiagnostic] = []
    /// Runs, settles and publishes fetches.
    let pipeline: FetchPipeline
    /// Each handler's runtime state, by name (entries made on first need).
    var runtime: [String: HandlerRuntime] = [:]
    /// The machine's power and network as last seen.
    var conditions = Conditions()
    /// The handlers waiting for their conditions, as logged.
    var conditionWaits = ConditionWaits()
    /// Where the coordinator's decisions are logged (the journal under systemd).
    let logger: Logger
    /// This daemon process, as `fetchctl status` shows it and as the owner of pushes.
    var instance = DaemonInstance()
    /// The usage planner's latest decisions.
    var plans: UsagePlans
    /// Told of every fetch's end, once its result is recorded (the D-Bus API's signal).
    var completionObserver: (any FetchCompletionObserver)?

    /// Creates a coordinator over opened stores.
    public init(config: LoadedConfig, snapshots: SnapshotStore, state: StateStore, logger: Logger) {
        self.config = config.replacingRegistered(with: RegisteredHandlers.load(from: state, daemon: config.daemon, logger: logger))
        self.logger = logger
        self.pipeline = FetchPipeline(snapshots: snapshots, state: state, daemon: config.daemon, logger: logger)
        self.plans = UsagePlans(planning: UsagePlanning(state: state))
    }

    /// The snapshot cache.
    public nonisolated var snapshots: SnapshotStore { pipeline.snapshots }
    /// The state database.
    public nonisolated var state: StateStore { pipeline.state }

    /// Whether a handler named `name` is loaded.
    func isLoaded(_ name: String) -> Bool { config.handler(named: name) != nil }

    /// Whether `name` is running now.
    func isRunning(_ name: String) -> Bool { runtime[name]?.isRunning ?? false }

    /// Whether `name` is running or finished less than `seconds` ago (`HandlerRuntime.ranRecently`).
    func ranRecently(_ name: String, within seconds: Double) -> Bool { runtime[name]?.ranRecently(within: seconds) ?? false }

    /// Runs every due handler of this wake together (bounded by the slots) and returns
    /// when all have finished. Handlers still running from an earlier wake are skipped.
    /// Returns the records of the fetches it ran.
    @discardableResult
    public func runDue(trigger: FetchTrigger = .timer, now: Date = Date()) async -> [CompletedFetch] {
        await runWake(trigger: trigger, now: now, into: [])
    }

    /// `runDue`, counting the fetches' results instead of keeping their records: the
    /// wake clock's and `fetchd --once`'s wakes.
    @discardableResult
    public func runDueCounting(trigger: FetchTrigger = .timer, now: Date = Date()) async -> WakeTally {
        await runWake(trigger: trigger, now: now, into: WakeTally())
    }

    /// A wake's http fetches run as one batch (`HTTPBatch`: no task per fetch); its programs,
    /// pushes and transfers each in a task of a bounded window (`WakeQueue`), beside it.
    private func runWake<Records: WakeRecords>(trigger: FetchTrigger, now: Date, into result: Records) async -> Records {
        // Chosen in a synchronous step of its own: a local lives to the end of its scope, and
        // this scope ends with the wake, so the lists the choice goes through would stay all
        // wake long.
        guard let wake = takeDue(now: now) else { return result }
        let handlers = wake.handlers
        let batch = wake.batch.isEmpty ? nil : HTTPBatch(
            handlers: handlers, states: wake.states, fetches: wake.batch, trigger: trigger, pipeline: pipeline,
            window: 4 * config.daemon.httpMaxTransfers)
        if let batch {
            for (index, fetch) in wake.batch.enumerated() { runtime[handlers[fetch.place].name]?.inBatch = (batch, index) }
        }
        // A bounded window of tasks, not one per due handler: ten thousand due handlers would
        // otherwise hold ten thousand suspended tasks.
        let window = 2 * (config.daemon.maxConcurrent + config.daemon.httpMaxTransfers)
        async let others = WakeQueue.run(wake.queue, width: window, into: Records(), { $0.add($1) }) { index in
            let handler = handlers[index]
            return await self.fetch(handler, trigger: WakeQueue.cause(of: handler, in: trigger),
                                    state: .read(wake.states[handler.name]),
                                    deferred: wake.pushes[handler.name]).record
        }
        var records = result
        if let batch {
            records = await batch.run(into: records) { finished in await self.finishBatch(finished) }
        }
        records.merge(await others)
        return records
    }

    /// The handlers a wake at `now` runs, each taken by the wake: `batch` its http fetches,
    /// marked running at once (`HTTPBatch`), `queue` the places in `handlers` of the rest (the
    /// configuration the wake chose from, kept by it through a reload), in the order it starts
    /// them. Places, not copies: in a wake of 10,000 each list of copies of their
    /// configurations was 6 MB, and the choice went through four of them at once.
    /// Nil when none is due.
    private func takeDue(now: Date) -> (handlers: [HandlerConfig], batch: [HTTPBatch.Fetch], queue: [Int],
                                        states: [String: HandlerState], pushes: [String: PendingPush])? {
        let eligibility = eligibility(now: now)
        let handlers = eligibility.input.handlers
        conditionWaits.note(eligibility, logger: logger)
        var due = eligibility.ready
        // Deferred pushes whose time has come run as push fetches, with their data.
        let pushes = takePushes(eligibility.pushesDue, now: now)
        if !pushes.isEmpty {
            let names = Set(due.map { handlers[$0].name })
            due += handlers.indices.filter { pushes[handlers[$0].name] != nil && !names.contains(handlers[$0].name) }
        }
        guard !due.isEmpty else { return nil }
        logger.debug("wake: \(due.count) handler(s) due: \(due.map { handlers[$0].name }.joined(separator: ", "))")
        // Hosts interleaved, so the window never fills with the fetches of one host waiting for
        // that host's slots. Each URL's key is worked out here, once.
        let keyed = due.map { (place: $0, key: pipeline.slot(for: handlers[$0]).1) }
        var batch: [HTTPBatch.Fetch] = []
        var queue: [Int] = []
        for item in WakeQueue.interleavedByHost(keyed, key: \.key) {
            let name = handlers[item.place].name
            if case .http = handlers[item.place].options, pushes[name] == nil {
                // Running from now on: a fetch asked for meanwhile takes it over while the batch
                // has not started it, else joins it (`fetch`).
                runtime[name, default: HandlerRuntime()].waiters = []
                batch.append(HTTPBatch.Fetch(place: item.place, key: item.key))
            } else {
                // Each one is handed to `fetch`, which frees it, even at shutdown (the wake's
                // window drains the queue): none stays taken, and a later wake's taking of it is
                // never undone.
                runtime[name, default: HandlerRuntime()].takenByWake = true
                queue.append(item.place)
            }
        }
        return (handlers, batch, queue, eligibility.input.states, pushes)
    }

    /// What the records of a wake's batch change here, as each fetch's own end does (`finished`).
    private func finishBatch(_ records: [(HandlerConfig, CompletedFetch)]) {
        for (handler, record) in records {
            runtime[handler.name]?.inBatch = nil
            logAndNote(record, of: handler)
            finished(handler.name, record: record)
        }
    }

    /// Runs `name` now, or joins its fetch if one is running; nil when no such handler is loaded.
    public func fetch(_ name: String, trigger: FetchTrigger) async -> CompletedFetch? {
        await fetchJoining(name, trigger: trigger)?.record
    }

    /// `fetch(_:trigger:)`, also saying whether the record is that of a fetch already running
    /// when this one came to start (`joined`), decided where the join happens: a caller that
    /// looked before queueing the fetch could be wrong by the time it ran.
    /// `push` is a push admitted to fetch at once (`admitPush`): it runs as a push fetch with its
    /// data and is finished (removed from the database) once its result is recorded. A push
    /// never joins: it waits for a running fetch to end and fetches again, since the running one
    /// cannot know what the push announced.
    public func fetchJoining(_ name: String, trigger: FetchTrigger,
                             push: PendingPush? = nil) async -> (record: CompletedFetch, joined: Bool)? {
        guard let handler = config.handler(named: name) else { return nil }
        return await fetch(handler, trigger: trigger, state: .unread, deferred: push)
    }

    /// Runs `handler` now, or joins its fetch. `state` is its stored state when the caller has
    /// it at hand (a wake read them all at once; `.read(nil)`: never fetched).
    /// A `deferred` push runs as a push fetch with its data, and is finished (removed from the
    /// database) once its result is recorded, before anything else can see it again.
    private func fetch(_ handler: HandlerConfig, trigger: FetchTrigger, state: Lookup<HandlerState>,
                       deferred: PendingPush? = nil) async -> (record: CompletedFetch, joined: Bool) {
        let name = handler.name
        runtime[name, default: HandlerRuntime()].takenByWake = false  // started: `waiters` covers it from here
        let trigger = deferred == nil ? trigger : .push
        var state = state
        if let member = runtime[name]?.inBatch, member.batch.takeOver(member.index) {
            // The wake's batch had not started it: it runs here, now, still marked running (a
            // fetch asked for next joins this one), and the wake no longer counts it.
            runtime[name]?.inBatch = nil
        } else {
            while isRunning(name) {
                let record = await withCheckedContinuation { (waiter: CheckedContinuation<CompletedFetch, Never>) in
                    runtime[name]?.waiters?.append(waiter)
                }
                if trigger != .push { return (record, true) }
                state = .unread  // the fetch waited for changed it (validators): read it again
            }
            runtime[name, default: HandlerRuntime()].waiters = []
        }
        let record = await execute(handler, trigger: trigger, state: state, pushData: deferred?.data)
        if let deferred {
            if deferred.owner != instance.id { runtime[name]?.pushTaken = false }  // a wake took it
            // A fetch stopped by shutdown did not deliver the push: it stays for the next start.
            if !Task.isCancelled { pushes.finish(deferred) }
        }
        finished(name, record: record)
        return (record, false)
    }

    /// `name`'s fetch has ended with `record`: it no longer runs, and those who joined it get it.
    private func finished(_ name: String, record: CompletedFetch) {
        let waiters = runtime[name]?.waiters ?? []
        runtime[name]?.waiters = nil
        runtime[name]?.finishedAt = .now
        waiters.forEach { $0.resume(returning: record) }
    }

    /// One fetch of `handler` in the pipeline, then what it changes here: the plan, and for a
    /// transfer paused by its conditions, why it waits.
    private func execute(_ handler: HandlerConfig, trigger: FetchTrigger, state: Lookup<HandlerState>,
                         pushData: String?) async -> CompletedFetch {
        if let download = handler.transfer {
            let run = await pipeline.transfer(handler, download, trigger: trigger, daemon: config.daemon)
            if let reason = run.pausedBecause { conditionWaits.paused(handler.name, because: reason) }
            // A pause records nothing: it neither fails nor recovers.
            if run.pausedBecause == nil { pipeline.alerts.note(run.record, of: handler, daemon: config.daemon) }
            noted(run.record, of: handler)
            return run.record
        }
        let record = await pipeline.fetch(handler, trigger: trigger, state: state, pushData: pushData, daemon: config.daemon)
        logAndNote(record, of: handler)
        return record
    }

    /// A fetch's durable record, journaled and noted.
    private func logAndNote(_ record: CompletedFetch, of handler: HandlerConfig) {
        pipeline.log(record, snapshot: record.version == nil ? nil : snapshots.latestContentPath(of: handler.name))
        pipeline.alerts.note(record, of: handler, daemon: config.daemon)
        noted(record, of: handler)
    }

    /// What a fetch's end changes here besides its runtime: the plan, the observer, the
    /// snapshots of a handler unregistered meanwhile.
    private func noted(_ record: CompletedFetch, of handler: HandlerConfig) {
        plans.forget(handler.name)  // the budget and the content's age changed: plan again
        completionObserver?.fetchCompleted(record, of: handler)
        removeSnapshotsIfUnregistered(handler)
    }
}
