import FetchdControl
@testable import FetchdDaemon
import FetchdState
import FetchdTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `fetchctl fetch --wait` says whether its answer is the record of a fetch that was already
/// running (`joined_running`), and that must be so when the fetch queued for it comes to start,
/// not when the request arrived: a timer fetch may begin in between. The SIGKILL torture under
/// AddressSanitizer (slow enough to widen that window) counted such a joined timer fetch as an
/// acknowledged manual one, told "not joined", and then found it missing from the history.
@Suite(.serialized)
struct FetchJoinReportTests {
    /// The control answer, set by the task that asked.
    private final class Answer: Sendable {
        let value = Mutex<ControlResponse?>(nil)
    }

    @Test func aFetchThatFindsATimerFetchStartedSinceItsRequestSaysItJoined() async throws {
        let directory = try TemporaryDirectory("join-report")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, main: "kill_grace = \"1s\"", handlers: """
            [[handler]]
            name = "slow"
            kind = "exec"
            command = ["/bin/sh", "-c", "sleep 1; date +%s%N > \\"$FETCHD_OUTPUT\\""]
            min_interval = "never"
            """)
        let logger = Logger(label: "join-report-test")
        let clock = WakeClock(coordinator: coordinator, logger: logger)
        let control = DaemonControlHandler(coordinator: coordinator, clock: clock, reloads: ReloadService.Requests())
        let peer = PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid())
        let answer = Answer()
        let services = ServiceGroup(configuration: .init(services: [.init(service: clock)], logger: logger))

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            // The request arrives while nothing runs: its fetch is queued to the wake clock, which
            // does not run yet, so it cannot start.
            tasks.addTask {
                let response = await control.handle(ControlRequest(command: .fetch, handler: "slow", wait: true), from: peer)
                answer.value.withLock { $0 = response }
            }
            try await Task.sleep(for: .milliseconds(200))
            // Then a timer fetch starts, and only then does the wake clock take the queued fetch.
            tasks.addTask { _ = await coordinator.fetch("slow", trigger: .timer) }
            var started = false
            for _ in 0..<500 where !started {
                started = await coordinator.isRunning("slow")
                if !started { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(started, "the timer fetch never started")
            tasks.addTask { try await services.run() }
            #expect(await waitUntil(timeoutSeconds: 30) { answer.value.withLock { $0 != nil } }, "no answer")
            await services.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }

        let report = try #require(answer.value.withLock { $0 }?.fetch)
        #expect(report.result == "newData")
        #expect(report.joinedRunning, "the answer is the timer fetch's record, so it joined a running fetch")
        let history = try StateStore(path: directory.file("state/state.sqlite")).history(of: "slow", limit: 10)
        #expect(history.map(\.trigger) == [.timer], "one fetch ran, the timer's: \(history)")
    }
}
