import Foundation
import Testing

/// The short versions of `make torture`'s fault parts (issue 7), each against a real `fetchd`:
/// clock jumps and suspend (Tests/Torture/clock_torture.py), config churn (reload_torture.py),
/// resource exhaustion (exhaustion_torture.py) and the soak (soak_torture.py). Each script checks its own claims and exits 1
/// at the first violation; these tests demand exit 0 and the script's summary line.
///
/// Run in the CPU-bound pass of `make test`: they load the machine (10,000 handlers, 2,000 forked
/// processes, programs printing without end, 200 handlers fetching about 15 times a second), which
/// would delay the timers of timing-sensitive suites.
@Suite(.serialized)
struct FaultTortureTests {
    static let hasCompiler = ["/usr/bin/cc", "/usr/bin/clang", "/usr/bin/gcc"].contains { FileManager.default.isExecutableFile(atPath: $0) }
        || (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .contains { FileManager.default.isExecutableFile(atPath: "\($0)/clang") }
    static let hasPrlimit = ["/usr/bin/prlimit", "/bin/prlimit"].contains { FileManager.default.isExecutableFile(atPath: $0) }

    /// Wall clock forward 3 h, back 6 h, then a resume 8 h later (fetchd's wall clock stepped by
    /// Tests/Torture/fakeclock.c): bounded by max_concurrent, no handler sooner than its
    /// min_interval but for one catch-up, status near now, schedule recovers.
    @Test(.enabled(if: FaultTortureTests.hasCompiler, "needs a C compiler for the clock shim"))
    func clockJumpsAndSuspendKeepTheScheduleSane() async throws {
        let run = try await TortureScript.run("clock_torture.py", ["--events", "0"], timeoutSeconds: 240)
        #expect(run.status == 0 && run.output.contains("clock torture: 3 events"), "\(run.output)")
    }

    /// A fifth of the I/O fault points of a 3-handler wake (a write, sync, rename, mkdir, symlink or
    /// open of the cache or the database failing with EIO, ENOSPC or EDQUOT; Tests/Torture/iofault.c):
    /// no crash, no torn snapshot, nothing logged and lost, every handler fetched once the fault is gone.
    @Test(.enabled(if: FaultTortureTests.hasCompiler, "needs a C compiler for the I/O fault shim"))
    func ioErrorsLeaveNothingTornOrLost() async throws {
        let run = try await TortureScript.run("io_fault_torture.py", ["--every", "5"], timeoutSeconds: 300)
        #expect(run.status == 0 && run.output.contains("I/O faults: ") && run.output.contains(", 0 violations"), "\(run.output)")
    }

    /// A sample of the states a power loss during a 10-handler wake may leave (ext4 data=ordered;
    /// Tests/Torture/crash_states.py): complete snapshots, a sound database, nothing logged and
    /// lost; fetchd started on some of them fetches again.
    @Test(.enabled(if: FaultTortureTests.hasCompiler, "needs a C compiler for the recording shim"))
    func crashStatesLoseNothingAcknowledged() async throws {
        let run = try await TortureScript.run("crash_states.py", ["--cap", "300", "--start-every", "25"], timeoutSeconds: 300)
        #expect(run.status == 0 && run.output.contains("crash states: ") && run.output.contains(", 0 violations"), "\(run.output)")
    }

    /// Fifty reloads, valid and invalid, while handlers run: never a crash, the last valid config in force.
    @Test func fiftyReloadsKeepTheLastValidConfig() async throws {
        let run = try await TortureScript.run("reload_torture.py", ["--reloads", "50"], timeoutSeconds: 240)
        #expect(run.status == 0 && run.output.contains("reload torture: 50 reloads"), "\(run.output)")
    }

    /// 10,000 handlers configured, 1,000 due: start, status lists all, one wake takes them (a wake
    /// starting meanwhile takes none again), within max_concurrent.
    @Test func tenThousandHandlersStartAnswerAndRunBounded() async throws {
        let run = try await TortureScript.run("exhaustion_torture.py", ["many", "--handlers", "10000", "--scheduled", "1000"],
                                              timeoutSeconds: 600)
        #expect(run.status == 0 && run.output.contains("many handlers: 10000 configured"), "\(run.output)")
    }

    /// Two handlers forking 1,000 children each: none outlives its fetch, the neighbour goes on.
    @Test func forkedChildrenAreAllKilled() async throws {
        let run = try await TortureScript.run("exhaustion_torture.py", ["fork", "--children", "1000"], timeoutSeconds: 240)
        #expect(run.status == 0 && run.output.contains("fork: 2 handlers each forked 1000"), "\(run.output)")
    }

    /// Output without end on stdout and stderr: memory bounded, the reason a short tail.
    @Test func endlessOutputStaysBounded() async throws {
        let run = try await TortureScript.run("exhaustion_torture.py", ["spew", "--seconds", "3"], timeoutSeconds: 240)
        #expect(run.status == 0 && run.output.contains("spew: 2 handlers printed without end"), "\(run.output)")
    }

    /// RLIMIT_NOFILE lowered under the daemon: a fetch fails naming EMFILE, fetchd answers, then recovers.
    @Test(.enabled(if: FaultTortureTests.hasPrlimit, "needs prlimit (util-linux)"))
    func lowFileDescriptorLimitFailsFetchesClearly() async throws {
        let run = try await TortureScript.run("exhaustion_torture.py", ["nofile"], timeoutSeconds: 240)
        #expect(run.status == 0 && run.output.contains("nofile: fetchd held"), "\(run.output)")
    }

    /// Two minutes of the soak: 200 handlers against a loopback server, every result path, uses,
    /// reads and pushes meanwhile. Memory, descriptors and the database's content stay within
    /// their bounds, no handler holds more than its versions or history rows, no staging file is
    /// left. The CPU-per-fetch and rate trends need `make torture`'s 20 minutes (`--short`).
    @Test func twoMinuteSoakStaysBounded() async throws {
        let run = try await TortureScript.run("soak_torture.py", ["--minutes", "2", "--short", "--replay-cycles", "0",
                                                                  "--sample-seconds", "3"], timeoutSeconds: 600)
        #expect(run.status == 0 && run.output.contains("soak torture: 200 handlers"), "\(run.output)")
    }
}
