import Dispatch
import FetchdCore
import FetchdHandlers
import FetchdTestSupport
import Foundation
import Synchronization
import Testing

/// The completion contract, exercised with small Swift handlers (no processes).
@Suite("FetchRunner completion contract", .timeLimit(.minutes(1)))
struct SwiftContractTests {
    /// The deadline used by these tests.
    static let deadline: Duration = .seconds(1)
    /// Scheduling slack allowed on top of the contract's bounds. Generous: a loaded 2-core
    /// machine has stalled Swift's pool for over a second; the handlers these bound would
    /// otherwise run 60 s, so a deadline that did not work still fails.
    static let margin: Duration = .seconds(10)

    /// A handler built from a closure.
    struct ClosureHandler: FetchHandler {
        /// The body run as `performFetch`.
        let body: @Sendable (FetchContext) async -> Void
        /// Runs the body.
        func performFetch(context: FetchContext) async { await body(context) }
    }

    /// Sleeps without reacting to cancellation, like a handler that ignores its task.
    static func sleepIgnoringCancellation(_ duration: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + duration.inSeconds) { continuation.resume() }
        }
    }

    /// Completing twice keeps the first result and counts the second as ignored.
    @Test func doubleCompletionKeepsTheFirst() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let answers = Mutex<[Bool]>([])
        let handler = ClosureHandler { context in
            let first = context.complete(.noData(details: ["n": "1"]))
            let second = context.complete(.failed(reason: "second"))
            answers.withLock { $0 = [first, second] }
        }
        // A long deadline: the run must end well before it, even when a busy 2-core machine (other
        // suites block the cooperative pool with waitpid and the like) delays it by a second or two.
        let (outcome, elapsed) = await timedRun(handler, context: makeContext(in: directory, deadline: .seconds(6)))
        #expect(outcome.completion == .noData(details: ["n": "1"]))
        #expect(outcome.ignoredCompletions == 1)
        #expect(!outcome.expired)
        #expect(answers.withLock { $0 } == [true, false])
        expectElapsed(elapsed, in: .zero ... .seconds(3))
    }

    /// Returning without completing is `expired`, reported at the deadline (not before).
    @Test func noCompletionExpiresAtTheDeadline() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let context = makeContext(in: directory, deadline: Self.deadline)
        let (outcome, elapsed) = await timedRun(ClosureHandler { _ in }, context: context)
        #expect(outcome.expired)
        #expect(outcome.completion == nil)
        #expect(!outcome.interrupted)
        #expect(context.isExpired)
        expectElapsed(elapsed, in: Self.deadline - .milliseconds(20) ... Self.deadline + Self.margin)
    }

    /// A completion from a detached task after the handler returned, but before the deadline,
    /// counts, and the run ends as soon as it arrives.
    @Test func detachedCompletionBeforeTheDeadlineCounts() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let handler = ClosureHandler { context in
            Task.detached {
                try? await Task.sleep(for: .milliseconds(200))
                context.complete(.newData(contentType: "text/plain"))
            }
        }
        let (outcome, elapsed) = await timedRun(handler, context: makeContext(in: directory, deadline: .seconds(6)))
        #expect(outcome.completion == .newData(contentType: "text/plain"))
        #expect(!outcome.expired)
        expectElapsed(elapsed, in: .milliseconds(180) ... .seconds(3))  // at the completion, long before the 6 s deadline
    }

    /// Suspends until `context` has expired (its expiration callbacks ran) or `limit` has passed,
    /// whichever comes first, ignoring cancellation like a handler that does not watch its task.
    static func waitForExpiry(of context: FetchContext, limit: Duration) async {
        let signal = StopSignal()
        context.onExpiration { signal.fire() }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit.inSeconds) { signal.fire() }
        await signal.wait()
    }

    /// A completion from a handler still running past the deadline is ignored.
    @Test func completionAfterTheDeadlineIsIgnored() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let accepted = Mutex<Bool?>(nil)
        let wasExpired = Mutex<Bool?>(nil)
        let returned = Atomic<Bool>(false)
        let handler = ClosureHandler { context in
            // Completes only once the context has expired, so the test does not race the clock.
            // Should the deadline not work, it completes anyway at deadline + 12 s: accepted, a
            // completion and not expired, and past the elapsed bound.
            await Self.waitForExpiry(of: context, limit: Self.deadline + .seconds(12))
            wasExpired.withLock { $0 = context.isExpired }
            let answer = context.complete(.newData())
            accepted.withLock { $0 = answer }
            returned.store(true, ordering: .relaxed)
        }
        let (outcome, elapsed) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
        #expect(wasExpired.withLock { $0 } == true, "the handler completed before the context expired")
        #expect(outcome.expired)
        #expect(outcome.completion == nil)
        #expect(outcome.ignoredCompletions == 1)
        #expect(accepted.withLock { $0 } == false)
        // The runner waits for the handler to return, so nothing outlives the run.
        let handlerReturned = returned.load(ordering: .relaxed)
        #expect(handlerReturned, "the run ended before its handler returned")
        expectElapsed(elapsed, in: Self.deadline - .milliseconds(20) ... Self.deadline + .seconds(10))
    }

    /// A detached completion arriving after the deadline (and after the run) is refused.
    @Test func detachedCompletionAfterTheDeadlineIsRefused() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let context = makeContext(in: directory, deadline: .milliseconds(300))
        let (outcome, _) = await timedRun(ClosureHandler { _ in }, context: context)
        #expect(outcome.expired)
        #expect(context.complete(.newData()) == false)
    }

    /// Expiration callbacks run exactly once, at the deadline, before the handler is cancelled.
    @Test func expirationCallbackRunsOnceAtTheDeadline() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let clock = ContinuousClock()
        let start = clock.now
        let calls = Mutex<[Duration]>([])
        let lateCalls = Atomic<Int>(0)
        let context = makeContext(in: directory, deadline: Self.deadline)
        let handler = ClosureHandler { context in
            context.onExpiration { calls.withLock { $0.append(clock.now - start) } }
            try? await Task.sleep(for: .seconds(60))  // cancelled at the deadline
        }
        let (outcome, _) = await timedRun(handler, context: context)
        #expect(outcome.expired)
        let times = calls.withLock { $0 }
        #expect(times.count == 1)
        if let time = times.first {
            expectElapsed(time, in: Self.deadline - .milliseconds(20) ... Self.deadline + Self.margin)
        }
        // Registered after expiry, a callback runs at once (and only once).
        context.onExpiration { lateCalls.add(1, ordering: .relaxed) }
        #expect(lateCalls.load(ordering: .relaxed) == 1)
        #expect(calls.withLock { $0.count } == 1)
    }

    /// Expiration callbacks do not run when the handler completes in time.
    @Test func expirationCallbackDoesNotRunAfterCompletion() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let calls = Atomic<Int>(0)
        let handler = ClosureHandler { context in
            context.onExpiration { calls.add(1, ordering: .relaxed) }
            context.complete(.noData())
        }
        let (outcome, _) = await timedRun(handler, context: makeContext(in: directory, deadline: .milliseconds(300)))
        try await Task.sleep(for: .milliseconds(400))  // past the deadline
        #expect(outcome.completion == .noData())
        #expect(calls.load(ordering: .relaxed) == 0)
    }

    /// A handler that completes and keeps running is cancelled at the deadline; its result stands.
    @Test func completedHandlerStillRunningIsCancelledAtTheDeadline() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let clock = ContinuousClock()
        let start = clock.now
        let cancelledAt = Mutex<Duration?>(nil)
        let expirations = Atomic<Int>(0)
        let handler = ClosureHandler { context in
            context.onExpiration { expirations.add(1, ordering: .relaxed) }
            context.complete(.newData(details: ["kept": "yes"]))
            try? await Task.sleep(for: .seconds(60))
            if Task.isCancelled { cancelledAt.withLock { $0 = clock.now - start } }
        }
        let (outcome, elapsed) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
        #expect(outcome.completion == .newData(details: ["kept": "yes"]))
        #expect(!outcome.expired)
        #expect(outcome.ignoredCompletions == 0)
        #expect(expirations.load(ordering: .relaxed) == 0)
        let cancelled = try #require(cancelledAt.withLock { $0 }, "the handler was never cancelled")
        expectElapsed(cancelled, in: Self.deadline - .milliseconds(20) ... Self.deadline + Self.margin)
        expectElapsed(elapsed, in: Self.deadline - .milliseconds(20) ... Self.deadline + Self.margin)
    }

    /// Cancelling the run from outside, with a handler that never completes, is `interrupted`
    /// and runs the expiration callbacks once.
    @Test func outsideCancellationInterrupts() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let expirations = Atomic<Int>(0)
        let handler = ClosureHandler { context in
            context.onExpiration { expirations.add(1, ordering: .relaxed) }
            try? await Task.sleep(for: .seconds(60))
        }
        let context = makeContext(in: directory, deadline: .seconds(10))
        let outcome = await runCancelled(handler, context: context, after: .milliseconds(300))
        let result = try #require(outcome)
        #expect(result.interrupted)
        #expect(!result.expired)
        #expect(result.completion == nil)
        #expect(expirations.load(ordering: .relaxed) == 1)
    }

    /// The context reports the time left and never a negative duration.
    @Test func timeRemainingCountsDown() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let context = makeContext(in: directory, deadline: .seconds(60))
        let first = context.timeRemaining
        #expect(first > .seconds(30))
        #expect(first <= .seconds(60))
        try await Task.sleep(for: .milliseconds(50))
        let second = context.timeRemaining
        #expect(second <= first - .milliseconds(50), "\(first.inSeconds) s, then \(second.inSeconds) s")
        // A deadline already passed: zero, not negative.
        let passed = makeContext(in: directory, deadline: .seconds(-1))
        #expect(passed.timeRemaining == .zero)
    }
}
