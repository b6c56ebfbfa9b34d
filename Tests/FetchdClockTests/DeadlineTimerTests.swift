@testable import FetchdClock
import FetchdTestSupport
import Foundation
import Synchronization
import Testing

/// The shared deadline timer behind every fetch's deadline: fires, is cancelled, and is not
/// fooled by the order in which deadlines arrive. Each test uses its own timer (and thread).
@Suite("DeadlineTimer", .timeLimit(.minutes(1)))
struct DeadlineTimerTests {
    @Test("a sleep returns true once its deadline has passed, not before")
    func firesAtTheDeadline() async {
        let timer = DeadlineTimer()
        let deadline = ContinuousClock.now + .milliseconds(80)
        #expect(await timer.sleep(until: deadline))
        #expect(ContinuousClock.now >= deadline)
        #expect(timer.pendingCount == 0)
    }

    @Test("a deadline already past returns at once")
    func pastDeadline() async {
        let timer = DeadlineTimer()
        #expect(await timer.sleep(until: .now - .seconds(1)))
    }

    @Test("cancelling the sleeping task returns false long before the deadline")
    func cancelled() async {
        let timer = DeadlineTimer()
        let start = ContinuousClock.now
        let task = Task { await timer.sleep(until: .now + .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(50))
        task.cancel()
        #expect(await task.value == false)
        #expect(start.duration(to: .now) < .seconds(20))
        #expect(timer.pendingCount == 0)
    }

    @Test("when the last live deadline is cancelled the thread ends then, not at that deadline")
    func cancellingTheLastDeadlineEndsTheThread() async {
        let timer = DeadlineTimer()
        let task = Task { await timer.sleep(until: .now + .seconds(50)) }
        #expect(await eventually(timeoutSeconds: 10) { timer.threadRunning })
        task.cancel()
        #expect(await task.value == false)
        #expect(await eventually(timeoutSeconds: 20) { !timer.threadRunning },
                "the thread should not stay armed for a cancelled deadline")
    }

    @Test("a cancelled scheduled action no longer holds the thread either")
    func cancellingTheLastActionEndsTheThread() async {
        let timer = DeadlineTimer()
        let id = timer.schedule(at: .now + .seconds(50)) {}
        #expect(await eventually(timeoutSeconds: 10) { timer.threadRunning })
        try? await Task.sleep(for: .milliseconds(50))  // the thread now waits for the 50 s one
        #expect(timer.cancelScheduled(id))
        #expect(await eventually(timeoutSeconds: 20) { !timer.threadRunning })
    }

    @Test("the alarm's nanoseconds never overflow: past is 0, beyond Int64 is Int64.max")
    func alarmNanoseconds() {
        #expect(ContinuousAlarm.nanoseconds(.milliseconds(1500)) == 1_500_000_000)
        #expect(ContinuousAlarm.nanoseconds(.seconds(-3)) == 0)
        #expect(ContinuousAlarm.nanoseconds(.seconds(Int64.max)) == Int64.max)
        #expect(ContinuousAlarm.nanoseconds(.seconds(9_223_372_036) + .milliseconds(900)) == Int64.max)
        #expect(ContinuousAlarm.nanoseconds(.seconds(9_223_372_036) + .milliseconds(800)) == 9_223_372_036_800_000_000)
    }

    @Test("a task cancelled before it sleeps does not sleep")
    func cancelledBeforeSleeping() async {
        let timer = DeadlineTimer()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await timer.sleep(until: .now + .seconds(30))
        }
        #expect(await task.value == false)
        #expect(timer.pendingCount == 0)
    }

    @Test("an earlier deadline that comes after a later one wakes the thread for it")
    func earlierDeadlineWakesTheThread() async {
        let timer = DeadlineTimer()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await timer.sleep(until: .now + .seconds(30)) }
            try? await Task.sleep(for: .milliseconds(50))  // the thread now waits for the 30 s one
            let start = ContinuousClock.now
            #expect(await timer.sleep(until: .now + .milliseconds(100)))
            #expect(start.duration(to: .now) < .seconds(20))
            group.cancelAll()
        }
        #expect(timer.pendingCount == 0)
    }

    @Test("many sleepers: the ones due fire, in any order of arrival; the others are cancelled")
    func manySleepers() async {
        let timer = DeadlineTimer()
        let fired = await withTaskGroup(of: Bool.self, returning: Int.self) { group in
            for index in 0..<500 {
                let offset: Duration = index % 2 == 0 ? .milliseconds(20 + index % 7 * 10) : .seconds(60)
                group.addTask { await timer.sleep(until: .now + offset) }
            }
            var fired = 0
            for await reached in group where reached {
                fired += 1
                if fired == 250 { group.cancelAll() }
            }
            return fired
        }
        #expect(fired == 250)
        #expect(timer.pendingCount == 0)
    }

    @Test("a scheduled action runs once at its deadline, not before, on the timer's thread")
    func scheduledActionRunsAtTheDeadline() async throws {
        let timer = DeadlineTimer()
        let start = ContinuousClock.now
        let ranAt = Mutex<[Duration]>([])
        let deadline = start + .milliseconds(150)
        _ = timer.schedule(at: deadline) { ranAt.withLock { $0.append(start.duration(to: .now)) } }
        #expect(ranAt.withLock { $0.isEmpty })
        try await Task.sleep(for: .milliseconds(600))
        let times = ranAt.withLock { $0 }
        #expect(times.count == 1)
        #expect(times.allSatisfy { $0 >= .milliseconds(150) })
        #expect(timer.pendingCount == 0)
    }

    @Test("a cancelled action never runs; cancelling one that ran says so")
    func cancelledActionDoesNotRun() async throws {
        let timer = DeadlineTimer()
        let runs = Atomic<Int>(0)
        let cancelled = timer.schedule(at: .now + .milliseconds(100)) { runs.add(1, ordering: .relaxed) }
        let kept = timer.schedule(at: .now + .milliseconds(100)) { runs.add(10, ordering: .relaxed) }
        #expect(timer.cancelScheduled(cancelled))
        try await Task.sleep(for: .milliseconds(500))
        #expect(runs.load(ordering: .relaxed) == 10)
        #expect(!timer.cancelScheduled(kept))
        #expect(timer.pendingCount == 0)
    }

    @Test("an action whose deadline has passed runs at once, before schedule returns")
    func pastActionRunsAtOnce() {
        let timer = DeadlineTimer()
        let runs = Atomic<Int>(0)
        let id = timer.schedule(at: .now - .seconds(1)) { runs.add(1, ordering: .relaxed) }
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(!timer.cancelScheduled(id))
    }

    @Test("once every deadline is cancelled, none stays queued to wake the thread until it passes")
    func cancellingTheLastDeadlineEmptiesTheQueue() {
        let timer = DeadlineTimer()
        let ids = (0..<3).map { _ in timer.schedule(at: .now + .seconds(60)) {} }
        #expect(timer.queuedCount == 3)
        ids.forEach { timer.cancelScheduled($0) }
        #expect(timer.queuedCount == 0)
        #expect(timer.pendingCount == 0)
    }
}
