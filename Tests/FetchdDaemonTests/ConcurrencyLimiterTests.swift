@testable import FetchdDaemon
import Synchronization
import Testing

/// Slots under contention: a release racing an acquire must never strand the waiter.
struct ConcurrencyLimiterTests {
    private final class Counter: Sendable { let value = Atomic<Int>(0) }

    /// Workers hammer acquire/release; a watchdog fails the test (and cancels the workers, which
    /// makes a stuck acquire return) if no slot is granted for two seconds.
    private func hammer(_ limiter: ConcurrencyLimiter, workers: [String], iterations: Int) async -> Bool {
        let grants = Counter(), finished = Counter()
        return await withTaskGroup(of: Bool.self) { group in
            for key in workers {
                group.addTask {
                    for _ in 0..<iterations {
                        guard await limiter.acquire(key: key) else { return false }
                        grants.value.add(1, ordering: .relaxed)
                        limiter.release(key: key)
                    }
                    finished.value.add(1, ordering: .relaxed)
                    return true
                }
            }
            group.addTask {
                var last = -1, idleChecks = 0
                while finished.value.load(ordering: .relaxed) < workers.count {
                    try? await Task.sleep(for: .milliseconds(250))
                    let now = grants.value.load(ordering: .relaxed)
                    idleChecks = now == last ? idleChecks + 1 : 0
                    if idleChecks == 8 { return false }  // no slot granted for two seconds: stuck
                    last = now
                }
                return true
            }
            // Every worker and the watchdog report true, unless the watchdog saw no progress:
            // then the workers are cancelled (their acquire returns false) to end the test.
            var allGood = true
            for await result in group where !result {
                allGood = false
                group.cancelAll()
            }
            return allGood
        }
    }

    @Test func aReleaseRacingAnAcquireNeverStrandsTheWaiter() async {
        #expect(await hammer(ConcurrencyLimiter(limit: 1), workers: ["", ""], iterations: 50_000))
    }

    @Test func perKeySlotsUnderContention() async {
        let limiter = ConcurrencyLimiter(limit: 2, perKeyLimit: 1)
        #expect(await hammer(limiter, workers: ["a", "a", "b", "b"], iterations: 20_000))
    }

    /// A batch's callback waiters queue in the same turns as tasks: granted in order as slots
    /// free, withdrawn only while still waiting.
    @Test func callbackWaitersAreGrantedInTurnAndWithdrawnOnlyWhileWaiting() async throws {
        let limiter = ConcurrencyLimiter(limit: 1)
        let granted = Mutex<[String]>([])
        #expect(limiter.acquire(key: "") { granted.withLock { $0.append("first") } } == nil)  // at once
        let second = try #require(limiter.acquire(key: "") { granted.withLock { $0.append("second") } })
        let third = try #require(limiter.acquire(key: "") { granted.withLock { $0.append("third") } })
        #expect(granted.withLock { $0 } == ["first"])
        #expect(limiter.withdraw(third))  // still waiting: never granted now
        limiter.release()
        #expect(granted.withLock { $0 } == ["first", "second"])
        #expect(!limiter.withdraw(second))  // granted already
        limiter.release()
        // A task waiting behind a callback gets the slot the callback's holder frees.
        #expect(limiter.acquire(key: "") { granted.withLock { $0.append("fourth") } } == nil)
        async let task = limiter.acquire(key: "")
        try? await Task.sleep(for: .milliseconds(50))
        limiter.release()
        #expect(await task)
        #expect(granted.withLock { $0 } == ["first", "second", "fourth"])
    }
}
