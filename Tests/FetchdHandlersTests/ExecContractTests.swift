import FetchdCore
import FetchdHandlers
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension ProcessTests {
    /// The exec program contract: exit statuses, FETCHD_OUTPUT, output volume, missing
    /// programs and the environment a program sees.
    @Suite("Exec handler program contract")
    struct ExecContractTests {
        /// The deadline used by these tests; every program here finishes long before it. These
        /// tests are about mapping exit statuses, not deadlines (ExecDeadlineTests is): a long
        /// deadline keeps a loaded machine from expiring a trivial script.
        static let deadline: Duration = .seconds(30)
        /// The upper bound on any run: generous for a loaded machine, yet half the deadline, so
        /// a run that ended only at its deadline (not at the program's exit) still fails.
        static let bound: Duration = .seconds(15)

        /// Exit 0 after writing FETCHD_OUTPUT is `newData`.
        @Test func exitZeroWithOutputIsNewData() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let run = await runScript(#"printf 'hello' > "$FETCHD_OUTPUT"; exit 0"#, in: directory, deadline: Self.deadline)
            #expect(run.outcome.completion == .newData())
            #expect(!run.outcome.expired)
            #expect(run.outcome.ignoredCompletions == 0)
            #expect(try String(contentsOfFile: directory.file("output"), encoding: .utf8) == "hello")
            expectElapsed(run.elapsed, in: .zero ... Self.bound)
            await expectGroupGone(run.pgid)
        }

        /// Exit 100 is `noData`, whether or not anything was written.
        @Test func exitHundredIsNoData() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let run = await runScript("exit 100", in: directory, deadline: Self.deadline)
            #expect(run.outcome.completion == .noData())
            expectElapsed(run.elapsed, in: .zero ... Self.bound)
            await expectGroupGone(run.pgid)
        }

        /// Any other status is `failed`, naming the status and quoting the last stderr line.
        @Test func otherStatusIsFailedWithStatusAndStderr() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let script = #"""
                echo 'progress: starting' >&2
                echo 'error: upstream said no' >&2
                exit 3
                """#
            let run = await runScript(script, in: directory, deadline: Self.deadline)
            let reason = try #require(run.outcome.failureReason)
            #expect(reason.contains("status 3"))
            #expect(reason.contains("error: upstream said no"))
            expectElapsed(run.elapsed, in: .zero ... Self.bound)
            await expectGroupGone(run.pgid)
        }

        /// Exit 0 without writing FETCHD_OUTPUT is a failure, not `newData`.
        @Test func exitZeroWithoutOutputIsFailed() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let run = await runScript("echo 'did nothing'; exit 0", in: directory, deadline: Self.deadline)
            let reason = try #require(run.outcome.failureReason)
            #expect(reason.contains("FETCHD_OUTPUT"))
            #expect(!FileManager.default.fileExists(atPath: directory.file("output")))
            expectElapsed(run.elapsed, in: .zero ... Self.bound)
            await expectGroupGone(run.pgid)
        }

        /// A program killed by a signal of its own is `failed`, naming the signal.
        @Test func deathBySignalIsFailed() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let run = await runScript("kill -KILL $$", in: directory, deadline: Self.deadline)
            let reason = try #require(run.outcome.failureReason)
            #expect(reason.contains("signal 9"))
            #expect(!run.outcome.expired)
            await expectGroupGone(run.pgid)
        }

        /// 100 MB on stdout is drained and discarded: the run completes normally and the
        /// test process's peak memory does not grow by anything near 100 MB.
        @Test func hugeStdoutIsDrainedWithBoundedMemory() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let peakBefore = peakResidentKiB()
            let run = await runScript(#"""
                head -c 100000000 /dev/zero || exit 9  # head dies of SIGPIPE if stdout is not drained
                echo
                echo 'the end' >&2
                printf 'done' > "$FETCHD_OUTPUT"
                exit 0
                """#, in: directory, deadline: .seconds(30))
            #expect(run.outcome.completion == .newData())
            expectElapsed(run.elapsed, in: .zero ... .seconds(30))
            // Not under AddressSanitizer: its quarantine keeps freed buffers resident by design.
            if let peakBefore, let peakAfter = peakResidentKiB(), !SanitizerRun.isAddressSanitizer {
                #expect(peakAfter - peakBefore < 50 * 1024, "peak RSS grew by \(peakAfter - peakBefore) KiB")
            }
            await expectGroupGone(run.pgid)
        }

        /// The tail kept for the failure reason is bounded even when the program prints a lot.
        @Test func failureReasonKeepsOnlyTheTail() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let run = await runScript(#"""
                i=0; while [ $i -lt 2000 ]; do echo "noise line $i"; i=$((i+1)); done
                echo 'last words' >&2
                exit 7
                """#, in: directory, deadline: Self.deadline)
            let reason = try #require(run.outcome.failureReason)
            #expect(reason.contains("status 7"))
            #expect(reason.contains("last words"))
            #expect(!reason.contains("noise line 0 "))
            #expect(reason.utf8.count < 2048 + 100)
            await expectGroupGone(run.pgid)
        }

        /// A program that does not exist is `failed` with a reason naming it.
        @Test func missingProgramIsFailedNamingIt() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let handler = ExecHandler(command: ["/nonexistent/prog", "--flag"], killGrace: .seconds(1))
            let context = makeContext(in: directory, deadline: Self.deadline)
            let (outcome, elapsed) = await timedRun(handler, context: context)
            let reason = try #require(outcome.failureReason)
            #expect(reason.contains("/nonexistent/prog"))
            #expect(!outcome.expired)
            expectElapsed(elapsed, in: .zero ... Self.bound)
        }

        /// A program name without a slash is looked up in the base PATH.
        @Test func programNameIsLookedUpInPath() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let handler = ExecHandler(command: ["sh", "-c", #"printf x > "$FETCHD_OUTPUT""#], killGrace: .seconds(1))
            let (outcome, _) = await timedRun(handler, context: makeContext(in: directory, deadline: Self.deadline))
            #expect(outcome.completion == .newData())
        }

        /// The program sees the FETCHD_* variables, its configured variables and nothing of
        /// the daemon's own environment.
        @Test func environmentIsCleanAndComplete() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            setenv("FETCHD_TEST_LEAK", "leaked", 1)
            defer { unsetenv("FETCHD_TEST_LEAK") }
            let previous = directory.file("previous-snapshot")
            try Data("old".utf8).write(to: URL(fileURLWithPath: previous))
            let configured = [
                "ENV_DUMP": directory.file("env"),
                "GREETING": "hello world",
                "FETCHD_OUTPUT": "/tmp/not-the-output",  // the real one must win
            ]
            let wallDeadline = Date().addingTimeInterval(Self.deadline.inSeconds)
            let run = await runScript(#"env > "$ENV_DUMP"; printf x > "$FETCHD_OUTPUT""#, in: directory,
                                      deadline: Self.deadline, environment: configured, previous: previous)
            #expect(run.outcome.completion == .newData())
            let env = try readEnvironmentDump(directory.file("env"))
            #expect(env["FETCHD_HANDLER"] == "test-handler")
            #expect(env["FETCHD_OUTPUT"] == directory.file("output"))
            #expect(env["FETCHD_TRIGGER"] == "manual")
            #expect(env["FETCHD_PREVIOUS"] == previous)
            #expect(env["GREETING"] == "hello world")
            let deadline = try #require(env["FETCHD_DEADLINE"].flatMap(Double.init))
            #expect(abs(deadline - wallDeadline.timeIntervalSince1970) < 3, "FETCHD_DEADLINE \(deadline)")
            #expect(env["FETCHD_TEST_LEAK"] == nil, "the daemon's environment leaked into the program")
            #expect(env["HOME"] == nil, "HOME is not configured, so the program must not see it")
            #expect(env["PATH"] != nil)
            await expectGroupGone(run.pgid)
        }

        /// A descriptor fetchd holds open without close-on-exec (a library's socket, a log file)
        /// is not passed to the program: it gets stdin, stdout and stderr only.
        @Test func noDescriptorIsInherited() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let marker = directory.file("held-open")
            try Data("x".utf8).write(to: URL(fileURLWithPath: marker))
            let held = open(marker, O_RDONLY)  // no O_CLOEXEC, on purpose
            #expect(held > 2)
            defer { close(held) }
            // ls's own descriptors: 0, 1 (the output), 2, and the folder it lists.
            let run = await runScript(#"ls -l /proc/self/fd > "$FETCHD_OUTPUT""#, in: directory, deadline: Self.deadline)
            #expect(run.outcome.completion == .newData())
            let listing = try String(contentsOfFile: directory.file("output"), encoding: .utf8)
            let numbers = listing.split(separator: "\n").compactMap { line -> Int? in
                guard let arrow = line.range(of: " -> ") else { return nil }
                return line[..<arrow.lowerBound].split(separator: " ").last.flatMap { Int($0) }
            }
            #expect(!listing.contains(marker), "the program inherited fetchd's descriptor \(held):\n\(listing)")
            #expect(numbers.sorted() == [0, 1, 2, 3], "\(listing)")
            await expectGroupGone(run.pgid)
        }

        /// Without a previous snapshot, FETCHD_PREVIOUS is absent rather than empty.
        @Test func previousIsAbsentWithoutASnapshot() async throws {
            let directory = try TemporaryDirectory("fetchd-hdl")
            let run = await runScript(#"env > "$ENV_DUMP"; exit 100"#, in: directory, deadline: Self.deadline,
                                      environment: ["ENV_DUMP": directory.file("env")])
            #expect(run.outcome.completion == .noData())
            let env = try readEnvironmentDump(directory.file("env"))
            #expect(env["FETCHD_PREVIOUS"] == nil)
            #expect(env["FETCHD_HANDLER"] == "test-handler")
            await expectGroupGone(run.pgid)
        }

        /// Parses the output of `env` (one `NAME=value` per line).
        private func readEnvironmentDump(_ path: String) throws -> [String: String] {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            var result: [String: String] = [:]
            for line in text.split(separator: "\n") {
                guard let equals = line.firstIndex(of: "=") else { continue }
                result[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
            return result
        }
    }
}
