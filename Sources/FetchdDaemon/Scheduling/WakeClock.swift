import FetchdClock
import FetchdCore
import FetchdState
import FetchdSystemd
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The daemon's one wake loop and the single inbox of what asks for a wake: the internal timer,
/// `fetchctl wake` (what systemd's wake timers run), the watchers' uses and changes of
/// conditions, a reload, the fetches someone asked for. After each wake or fetch it takes one
/// plan from the coordinator (`WakePlan`, from one `Eligibility`) and hands it out: the status
/// line to systemd, the next planned fetch to systemd's timer (`PlannedWakeTimer`), the time to
/// the internal timer. The same loop pings the systemd watchdog once the coordinator answers.
///
/// On graceful shutdown it cancels what is running (handlers take their expiration path) and
/// returns once all have been recorded.
final class WakeClock: Service, WakeRequests, Sendable {
    private enum Event: Sendable {
        case wake(WakeCause)
        case job(FetchJob)
        case replan
    }

    /// The plan the internal timer follows, and when it arrived on the continuous clock (its
    /// times are wall-clock times read at one moment: measured from that moment, a step of the
    /// wall clock cannot turn into a sleep of its size).
    private struct Timer {
        var plan: WakePlan?
        var arrivedAt = ContinuousClock.now
        /// Set when graceful shutdown begins: jobs submitted after it would never run.
        var stopping = false
    }

    /// How long after a systemd-delivered wake the internal timer steps in if it did not come.
    static let systemdWakeGrace: TimeInterval = 5
    /// The least wait before the next look, even when something is overdue: never spin.
    static let leastWaitSeconds = 0.5

    private let coordinator: FetchCoordinator
    private let logger: Logger
    private let notifier: SystemdNotifier
    private let planned: PlannedWakeTimer?
    private let watchdogInterval: Duration?
    /// What the first wake waits for, if anything (`StartGate`).
    private let startGate: StartGate?
    private let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let timer = Mutex(Timer())
    /// Rung when the plan changed (or systemd's timer did): the timer looks again.
    private let changed = WakeSignal()

    /// A clock over `coordinator`. `planned` keeps systemd's timer at the next planned fetch;
    /// `watchdogInterval` is systemd's `WatchdogSec` (pinged at half of it), nil without one;
    /// the first wake waits for `startGate`, if given.
    init(coordinator: FetchCoordinator, logger: Logger, notifier: SystemdNotifier = SystemdNotifier(),
         planned: PlannedWakeTimer? = nil, watchdogInterval: Duration? = nil, startGate: StartGate? = nil) {
        self.startGate = startGate
        self.coordinator = coordinator
        self.logger = logger
        self.notifier = notifier
        self.planned = planned
        self.watchdogInterval = watchdogInterval
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    /// Whether submitted jobs still run (false once graceful shutdown has begun); the push
    /// intake refuses pushes it could not deliver instead of acknowledging them.
    var acceptsJobs: Bool { !timer.withLock(\.stopping) }

    /// Asks for a wake now.
    func wake(_ cause: WakeCause) { continuation.yield(.wake(cause)) }

    /// Asks for a new plan without a wake (a deferred push may be due sooner).
    func replan() { continuation.yield(.replan) }

    /// After a reload: a wake (handlers and their schedules changed), and systemd's timer tried
    /// again (its template may be installed or allowed now).
    func reloaded() {
        planned?.reconsider()
        wake(.reload)
    }

    /// Queues a fetch of `job.handler`; `onFinish` gets its record.
    func submit(_ job: FetchJob) {
        if case .terminated = continuation.yield(.job(job)) { job.onFinish?(nil, false) }
    }

    /// Runs until graceful shutdown.
    func run() async {
        planned?.onHeldChange { [changed] in changed.signal() }
        // Every wake waits for the gate, not only the timer's first: a `fetchctl wake` or a
        // watcher's wake at start must not run what power-saver holds back either. Jobs (a manual
        // fetch, a push) do not wait: they run in power-saver too.
        let gate = Task { [startGate] in await startGate?.pass() }
        await withDiscardingTaskGroup { group in
            group.addTask {
                await gate.value
                await self.tick()
            }
            for await event in events.cancelOnGracefulShutdown() {
                switch event {
                case .wake(let cause):
                    logger.debug("wake: \(cause.rawValue)")
                    group.addTask {
                        await gate.value
                        await self.coordinator.runDueCounting(trigger: .timer)
                        await self.plan()
                    }
                case .job(let job):
                    group.addTask {
                        let outcome = await self.coordinator.fetchJoining(job.handler, trigger: job.trigger, push: job.push)
                        job.onFinish?(outcome?.record, outcome?.joined ?? false)
                        await self.plan()
                    }
                case .replan:
                    group.addTask { await self.plan() }
                }
            }
            timer.withLock { $0.stopping = true }
            notifier.stopping()
            logger.info("stopping: cancelling running fetches")
            continuation.finish()
            group.cancelAll()
        }
    }

    /// Takes one plan from the coordinator and hands it out.
    private func plan() async {
        let plan = await coordinator.wakePlan()
        notifier.status(plan.statusLine)
        planned?.plan(plan.systemdTimer)
        timer.withLock { $0 = Timer(plan: plan, arrivedAt: .now, stopping: $0.stopping) }
        changed.signal()
    }

    /// The internal timer: a wake at start, then at each plan's time (a plan is followed once;
    /// the wake it starts makes the next), and the watchdog's pings, until cancelled.
    private func tick() async {
        continuation.yield(.wake(.start))
        var nextPing = watchdogInterval.map { _ in ContinuousClock.now }
        while !Task.isCancelled {
            if let due = nextPing, ContinuousClock.now >= due, let interval = watchdogInterval {
                // Only once the coordinator answers: a stuck daemon stops pinging and is restarted.
                await coordinator.heartbeat()
                notifier.watchdog()
                nextPing = ContinuousClock.now + interval / 2
            }
            let deadline = wakeDeadline()
            if let deadline, ContinuousClock.now >= deadline {
                timer.withLock { $0.plan = nil }
                continuation.yield(.wake(.timer))
                continue
            }
            guard let until = [deadline, nextPing].compactMap({ $0 }).min() else {
                await changed.wait()
                continue
            }
            await changed.wait(atMost: until - ContinuousClock.now)
        }
    }

    /// When the plan in hand wants a wake, on the continuous clock; nil without a plan. When
    /// systemd's timer delivers that very wake (coalesced with the system's timers), ours only
    /// backs it up, a little later.
    private func wakeDeadline() -> ContinuousClock.Instant? {
        guard let (plan, arrivedAt) = timer.withLock({ state in state.plan.map { ($0, state.arrivedAt) } }) else { return nil }
        var wakeAt = plan.wakeAt
        if let held = planned?.activeTimerDate(), abs(wakeAt.timeIntervalSince(held)) <= Self.systemdWakeGrace {
            wakeAt = held.addingTimeInterval(Self.systemdWakeGrace)
        }
        let seconds = max(Self.leastWaitSeconds, wakeAt.timeIntervalSince(plan.madeAt))
        return arrivedAt + .milliseconds(Int64(seconds * 1000))
    }
}
