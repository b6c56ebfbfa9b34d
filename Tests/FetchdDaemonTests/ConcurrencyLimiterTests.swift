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
}
