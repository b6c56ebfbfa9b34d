@testable import FetchdHandlers
import FetchdCore
import FetchdTestSupport
import Foundation
import Synchronization
import Testing

/// The runner's path for handlers that stop themselves at expiration (`stopsAtExpiration`, the
/// http handler's): no child tasks, the deadline an action on the shared timer, and the same
/// contract as the general path.
@Suite("FetchRunner inline path", .timeLimit(.minutes(1)))
struct InlineRunnerTests {
    /// Scheduling slack allowed on top of the contract's bounds: generous, since a loaded 2-core
    /// machine can delay the runner by seconds. A broken deadline still shows: the handlers
    /// below otherwise wait until `fallback` past the deadline, well beyond it.
    static let margin: Duration = .seconds(10)
    /// How long past the deadline a handler's fallback ends its wait if the deadline never came.
    static let fallback: Duration = .seconds(15)

    /// A handler that says it stops at expiration, built from a closure.
    struct StoppingHandler: FetchHandler {
        /// The body run as `performFetch`.
        let body: @Sendable (FetchContext) async -> Void
        /// Runs the body.
        func performFetch(context: FetchContext) async { await body(context) }
        /// This handler's body honours expiration (and cancellation).
        var stopsAtExpiration: Bool { true }
    }

    /// Waits until the context expires or the task is cancelled, as the http handler waits for
    /// its transfer; returns whether it was stopped by the expiration. With `limit`, the wait
    /// also ends once that much time has passed (as libcurl's own time limit would).
    static func waitForStop(_ context: FetchContext, limit: Duration? = nil) async -> Bool {
        let signal = StopSignal()
        let expired = Atomic<Bool>(false)
        context.onExpiration {
            expired.store(true, ordering: .relaxed)
            signal.fire()
        }
        if let limit {
            DispatchQueue.global().asyncAfter(deadline: .now() + limit.inSeconds) { signal.fire() }
        }
        await withTaskCancellationHandler { await signal.wait() } onCancel: { signal.fire() }
        return expired.load(ordering: .relaxed)
    }

    @Test("the handler runs in the caller's task: no child task")
    func runsInTheCallersTask() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let handlerTask = Mutex<Int?>(nil)
        let handler = StoppingHandler { context in
            handlerTask.withLock { $0 = withUnsafeCurrentTask { $0?.hashValue } }
            context.complete(.noData())
        }
        let callerTask = withUnsafeCurrentTask { $0?.hashValue }
        let (outcome, elapsed) = await timedRun(handler, context: makeContext(in: directory, deadline: .seconds(6)))
        #expect(outcome.completion == .noData())
        #expect(handlerTask.withLock { $0 } == callerTask)
        expectElapsed(elapsed, in: .zero ... .seconds(3))
    }

    @Test("a handler still waiting at the deadline is stopped through its expiration callback: expired, at the deadline")
    func stoppedAtTheDeadline() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let deadline: Duration = .milliseconds(600)
        let returned = Atomic<Bool>(false)
        let stoppedByExpiry = Atomic<Bool>(false)
        let handler = StoppingHandler { context in
            let stopped = await Self.waitForStop(context, limit: deadline + Self.fallback)
            stoppedByExpiry.store(stopped, ordering: .relaxed)
            #expect(!context.complete(.newData()))  // too late: refused
            returned.store(true, ordering: .relaxed)
        }
        let (outcome, elapsed) = await timedRun(handler, context: makeContext(in: directory, deadline: deadline))
        #expect(outcome.expired)
        #expect(!outcome.interrupted)
        #expect(outcome.completion == nil)
        #expect(outcome.ignoredCompletions == 1)
        let (stopped, handlerReturned) = (stoppedByExpiry.load(ordering: .relaxed), returned.load(ordering: .relaxed))
        #expect(stopped)
        #expect(handlerReturned, "the run ended before its handler returned")
        expectElapsed(elapsed, in: deadline - .milliseconds(20) ... deadline + Self.margin)
    }

    @Test("returning without completing: a completion from elsewhere before the deadline counts, at once")
    func detachedCompletionCounts() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let handler = StoppingHandler { context in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) {
                context.complete(.newData(contentType: "text/plain"))
            }
        }
        let (outcome, elapsed) = await timedRun(handler, context: makeContext(in: directory, deadline: .seconds(6)))
        #expect(outcome.completion == .newData(contentType: "text/plain"))
        #expect(!outcome.expired)
        expectElapsed(elapsed, in: .milliseconds(180) ... .seconds(3))
    }

    @Test("returning without completing and nothing after: expired at the deadline, not before")
    func noCompletionExpiresAtTheDeadline() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let deadline: Duration = .milliseconds(500)
        let context = makeContext(in: directory, deadline: deadline)
        // Should the deadline not work, a completion from elsewhere ends the run at deadline +
        // fallback (not expired, and past the bound); when it works, this one comes late and is refused.
        DispatchQueue.global().asyncAfter(deadline: .now() + (deadline + Self.fallback).inSeconds) {
            context.complete(.newData())
        }
        let (outcome, elapsed) = await timedRun(StoppingHandler { _ in }, context: context)
        #expect(outcome.expired)
        #expect(outcome.completion == nil)
        #expect(context.isExpired)
        expectElapsed(elapsed, in: deadline - .milliseconds(20) ... deadline + Self.margin)
    }

    @Test("cancelled from outside (shutdown) before the deadline: interrupted, expiration callbacks once")
    func outsideCancellationInterrupts() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let expirations = Atomic<Int>(0)
        let handler = StoppingHandler { context in
            context.onExpiration { expirations.add(1, ordering: .relaxed) }
            _ = await Self.waitForStop(context)
        }
        let start = ContinuousClock.now
        let outcome = try #require(await runCancelled(handler, context: makeContext(in: directory, deadline: .seconds(10)),
                                                      after: .milliseconds(300)))
        #expect(outcome.interrupted)
        #expect(!outcome.expired)
        #expect(outcome.completion == nil)
        #expect(expirations.load(ordering: .relaxed) == 1)
        expectElapsed(start.duration(to: .now), in: .milliseconds(280) ... .seconds(5))
    }

    @Test("a completion in time cancels the deadline: no expiration callback afterwards")
    func completionCancelsTheDeadline() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let expirations = Atomic<Int>(0)
        let handler = StoppingHandler { context in
            context.onExpiration { expirations.add(1, ordering: .relaxed) }
            context.complete(.noData())
        }
        let (outcome, _) = await timedRun(handler, context: makeContext(in: directory, deadline: .milliseconds(200)))
        try await Task.sleep(for: .milliseconds(500))  // past the deadline
        #expect(outcome.completion == .noData())
        #expect(expirations.load(ordering: .relaxed) == 0)
    }
}
