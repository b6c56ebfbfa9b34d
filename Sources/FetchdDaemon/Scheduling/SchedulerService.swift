import FetchdClock
import FetchdCore
import FetchdState
import Foundation
import Synchronization
import Logging
import ServiceLifecycle

/// A fetch someone asked for (`fetchctl fetch`), queued to the scheduler so it runs in the
/// scheduler's task group and outlives the request that started it.
struct FetchJob: Sendable {
    let handler: String
    let trigger: FetchTrigger
    /// For a push admitted to fetch at once: the push (its data goes to the handler), finished
    /// once the fetch is recorded.
    var push: PendingPush? = nil
    /// Called when the fetch has finished (nil when nobody waits) with its record (nil when it
    /// did not run) and whether that is the record of a fetch that was already running.
    let onFinish: (@Sendable (_ record: FetchRecord?, _ joined: Bool) -> Void)?
}

/// The daemon's main loop: wakes at the next due time (at least every heartbeat), runs the
/// due handlers, and runs queued on-demand fetches. On graceful shutdown it cancels what is
/// running (handlers take their expiration path) and returns once all have been recorded.
public struct SchedulerService: Service {
    private enum Event: Sendable {
        case wake
        case job(FetchJob)
    }

    let coordinator: FetchCoordinator
    let logger: Logger
    /// Runs after every wake and every on-demand fetch (status line, planned timer).
    let afterWork: @Sendable () async -> Void
    /// Runs once when graceful shutdown begins.
    let onStopping: @Sendable () -> Void
    /// The time of a planned wake systemd will deliver (`PlannedWakeTimer`), if any.
    let systemdWake: @Sendable () async -> Date?
    /// How long after a systemd-delivered wake the internal timer steps in if it did not come.
    static let systemdWakeGrace: TimeInterval = 5
    private let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    /// Rung when a fetch finishes: the next wake time may have moved.
    private let replanSignal = WakeSignal()
    /// Set when graceful shutdown begins: jobs submitted after it would never run.
    private let stopping = StoppingFlag()

    /// Whether submitted jobs still run (false once graceful shutdown has begun); the push
    /// intake refuses pushes it could not deliver instead of acknowledging them.
    var acceptsJobs: Bool { !stopping.value.withLock { $0 } }

    /// Creates the service.
    public init(coordinator: FetchCoordinator, logger: Logger, afterWork: @escaping @Sendable () async -> Void = {},
                onStopping: @escaping @Sendable () -> Void = {}, systemdWake: @escaping @Sendable () async -> Date? = { nil }) {
        self.coordinator = coordinator
        self.logger = logger
        self.afterWork = afterWork
        self.onStopping = onStopping
        self.systemdWake = systemdWake
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    /// Asks for a wake now (the systemd wake timer, `fetchctl wake`).
    func wake() { continuation.yield(.wake) }

    /// Makes the timer loop compute its next wake again (a deferred push may be due sooner).
    func replan() { replanSignal.signal() }

    /// Queues a fetch of `handler`; `onFinish` gets its record.
    func submit(_ job: FetchJob) {
        if case .terminated = continuation.yield(.job(job)) { job.onFinish?(nil, false) }
    }

    /// Runs until graceful shutdown.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await tick() }
            for await event in events.cancelOnGracefulShutdown() {
                switch event {
                case .wake:
                    group.addTask {
                        await coordinator.runDueCounting(trigger: .timer)
                        replanSignal.signal()
                        await afterWork()
                    }
                case .job(let job):
                    group.addTask {
                        let outcome = await coordinator.fetchJoining(job.handler, trigger: job.trigger, push: job.push)
                        job.onFinish?(outcome?.record, outcome?.joined ?? false)
                        replanSignal.signal()
                        await afterWork()
                    }
                }
            }
            stopping.value.withLock { $0 = true }
            onStopping()
            logger.info("stopping: cancelling running fetches")
            continuation.finish()
            group.cancelAll()
        }
    }

    /// Emits a wake now and then at each next wake time, until cancelled. The plan is made again
    /// whenever a fetch finishes, since that moves the handler's next eligible time.
    private func tick() async {
        while !Task.isCancelled {
            continuation.yield(.wake)
            while !Task.isCancelled {
                let now = Date()
                var next = await coordinator.nextWake(now: now)
                // When systemd's timer delivers this very wake (coalesced with the system's
                // timers), ours only backs it up; a wake due at another time is ours to make.
                if let planned = await systemdWake(), abs(next.timeIntervalSince(planned)) <= Self.systemdWakeGrace {
                    next = planned.addingTimeInterval(Self.systemdWakeGrace)
                }
                // Never spin: even when something is overdue, wait a moment before the next look.
                // Measured from the wall-clock reading the plan was made with: a step of the clock
                // between two readings would become a sleep of its size (an hour back, an hour
                // asleep, the heartbeat skipped); the sleep itself runs on the continuous clock
                // (`DeadlineTimer`: CLOCK_BOOTTIME, which counts a suspend).
                let seconds = max(0.5, next.timeIntervalSince(now))
                let started = ContinuousClock.now
                await replanSignal.wait(atMost: .milliseconds(Int64(seconds * 1000)))
                if ContinuousClock.now - started >= .milliseconds(Int64(seconds * 1000)) { break }
            }
        }
    }
}

/// A flag shared by the copies of a `SchedulerService` (a struct, so it holds a reference).
private final class StoppingFlag: Sendable {
    let value = Mutex(false)
}
