@testable import FetchdDaemon
import Foundation
import Testing

/// The first wake's gate: opened before or during the wait it lets the wake through, and it
/// never holds it past its limit.
struct StartGateTests {
    @Test(.timeLimit(.minutes(1))) func anOpenGateLetsThroughAndAClosedOneOnlyUntilItsLimit() async {
        let open = StartGate()
        open.open()
        open.open()
        await open.pass(limitSeconds: 3600)

        let later = StartGate()
        Task { later.open() }
        await later.pass(limitSeconds: 3600)

        let closed = StartGate()
        let started = ContinuousClock.now
        await closed.pass(limitSeconds: 0.2)
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        await closed.pass(limitSeconds: 3600)  // waited on before: through at once
    }
}
