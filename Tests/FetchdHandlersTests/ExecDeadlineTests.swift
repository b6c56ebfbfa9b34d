import FetchdCore
import FetchdHandlers
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension ProcessTests {
    /// Exec handlers at and around the deadline: SIGTERM, SIGKILL after the grace period,
    /// leftovers in the process group, and cancellation from outside.
    @Suite("Exec handler deadlines and process groups")
    struct ExecDeadlineTests {
        /// The deadline used by these tests.
        static let deadline: Duration = .seconds(1)
        /// The kill grace used by these tests.
        static let grace: Duration = .seconds(1)
        /// Scheduling slack allowed on top of the contract's bounds.
        static let margin: Duration = .milliseconds(1500)

        /// The "no process left" check is not vacuous: it sees a live group, and a group whose
        /// only member is an unreaped zombie, and passes once the group is really gone.
        @Test func groupCheckDetectsLeftovers() async throws {
            ProcessGroups.becomeSubreaper()
            let pid = try spawnProcess(["sleep", "30"], ownProcessGroup: true)
            #expect(!ProcessGroups.isGone(pid))
            kill(pid, SIGKILL)
            try await Task.sleep(for: .milliseconds(50))
            #expect(kill(-pid, 0) == 0, "the zombie still belongs to the group until it is reaped")
            await expectGroupGone(pid)  // reaps it (it is our child) and then sees ESRCH
        }

        /// A program sleeping past the deadline dies of SIGTERM at the deadline: expired,
        /// well before the SIGKILL would have been sent.
        @Test func sleepingPastTheDeadlineExpiresOnSIGTERM() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let run = await runScript("sleep 30", in: directory, deadline: Self.deadline, killGrace: Self.grace)
            #expect(run.outcome.expired)
            #expect(run.outcome.completion == nil)
            #expect(!run.outcome.interrupted)
            // sh and sleep die on SIGTERM, so the run ends before the grace period is over.
            expectElapsed(run.elapsed, in: Self.deadline - .milliseconds(50)...Self.deadline + Self.grace)
            await expectGroupGone(run.pgid)
        }

        /// A program ignoring SIGTERM is killed with SIGKILL once the grace period has passed.
        @Test func ignoringSIGTERMIsKilledAfterTheGrace() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let run = await runScript(#"trap "" TERM; while :; do sleep 0.1; done"#, in: directory,
                                      deadline: Self.deadline, killGrace: Self.grace)
            #expect(run.outcome.expired)
            #expect(run.outcome.completion == nil)
            expectElapsed(run.elapsed, in: Self.deadline + Self.grace - .milliseconds(100)
                              ... Self.deadline + Self.grace + Self.margin)
            await expectGroupGone(run.pgid)
        }

        /// A grandchild that ignores SIGTERM and holds stdout open neither delays the result
        /// nor survives the program: it is SIGKILLed when the program exits.
        @Test func grandchildHoldingStdoutIsKilledWhenTheProgramExits() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let script = #"""
                printf 'fresh' > "$FETCHD_OUTPUT"
                (trap "" TERM; sleep 60) &
                echo $! > "$GRANDCHILD_FILE"
                echo started
                exit 0
                """#
            let run = await runScript(script, in: directory, deadline: .seconds(2), killGrace: Self.grace,
                                      environment: ["GRANDCHILD_FILE": directory.file("grandchild")])
            #expect(run.outcome.completion == .newData())
            #expect(!run.outcome.expired)
            // Not waiting for the grandchild (60 s) nor for the deadline (2 s).
            expectElapsed(run.elapsed, in: .zero ... .seconds(1))
            #expect(readPID(directory.file("grandchild")) != nil)
            await expectGroupGone(run.pgid)
        }

        /// A grandchild that ignores SIGTERM is still killed when the deadline passes, even
        /// though its parent dies of SIGTERM (the group is SIGKILLed once the program is gone).
        @Test func grandchildIgnoringSIGTERMDiesAtTheDeadline() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let run = await runScript(#"(trap "" TERM; sleep 60) & sleep 30"#, in: directory,
                                      deadline: Self.deadline, killGrace: Self.grace)
            #expect(run.outcome.expired)
            expectElapsed(run.elapsed, in: Self.deadline - .milliseconds(50)
                              ... Self.deadline + Self.grace + Self.margin)
            await expectGroupGone(run.pgid)
        }

        /// Cancelling the run from outside (daemon shutdown) stops the program and reports
        /// `interrupted`, not `expired`.
        @Test func cancellationFromOutsideInterruptsTheRun() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            ProcessGroups.becomeSubreaper()
            let handler = ExecHandler(
                command: shellCommand("sleep 30"),
                environment: [pgidFileVariable: directory.file("pgid")], killGrace: Self.grace)
            let context = makeContext(in: directory, deadline: .seconds(10))
            let clock = ContinuousClock()
            let start = clock.now
            let outcome = await runCancelled(handler, context: context, after: .milliseconds(300))
            let elapsed = clock.now - start
            let result = try #require(outcome)
            #expect(result.interrupted)
            #expect(!result.expired)
            #expect(result.completion == nil)
            #expect(context.isExpired)  // shutdown takes the expiration path
            expectElapsed(elapsed, in: .milliseconds(300) ... .milliseconds(300) + Self.grace + Self.margin)
            await expectGroupGone(readPID(directory.file("pgid")))
        }
    }
}
