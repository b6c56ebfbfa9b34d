import FetchdConfig
import FetchdCore
import FetchdDaemon
import FetchdSnapshots
import FetchdState
import FetchdTestSupport
import Foundation
import Logging
import Testing

/// The coordinator with real exec handlers: concurrency bound, one run per handler, results.
@Suite(.serialized)
struct CoordinatorTests {
    /// A coordinator on `handlers`, with a 1 s kill grace and `main` added to the main file.
    private func coordinator(in directory: TemporaryDirectory, main: String = "", handlers: String) throws -> FetchCoordinator {
        try TestConfig.coordinator(in: directory, main: "kill_grace = \"1s\"\n" + main, handlers: handlers)
    }

    @Test func aWakeRunsDueHandlersTogetherButNeverAboveMaxConcurrent() async throws {
        let directory = try TemporaryDirectory("coordinator")
        defer { directory.remove() }
        let log = directory.file("concurrency.log")
        let handlers = (1...6).map { index in """
            [[handler]]
            name = "h\(index)"
            kind = "exec"
            command = ["/bin/sh", "-c", "echo + >> \(log); sleep 0.3; echo - >> \(log); echo \(index) > \\"$FETCHD_OUTPUT\\""]
            """ }.joined(separator: "\n\n")
        let coordinator = try coordinator(in: directory, main: "max_concurrent = 2", handlers: handlers)
        await coordinator.runDue()
        var running = 0, peak = 0
        for line in try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n") {
            running += line == "+" ? 1 : -1
            peak = max(peak, running)
        }
        // Overlap, not elapsed time, shows they ran together: a loaded machine stretches time.
        #expect(peak == 2, "at most two at once, and two did overlap")
        let report = await coordinator.status(markSeen: false)
        #expect(report.handlers.allSatisfy { $0.lastResult == "newData" })
        #expect(report.handlers.allSatisfy { $0.newDataSinceLastLook == 1 })
    }

    /// The scheduler's wake counts how its fetches ended (newData, noData, failed, expired).
    @Test func aCountingWakeTalliesEachResult() async throws {
        let directory = try TemporaryDirectory("coordinator")
        defer { directory.remove() }
        let coordinator = try coordinator(in: directory, handlers: """
            [[handler]]
            name = "new"
            kind = "exec"
            command = ["/bin/sh", "-c", "echo 1 > \\"$FETCHD_OUTPUT\\""]

            [[handler]]
            name = "same"
            kind = "exec"
            command = ["/bin/sh", "-c", "exit 100"]

            [[handler]]
            name = "broken"
            kind = "exec"
            command = ["/bin/sh", "-c", "exit 1"]

            [[handler]]
            name = "slow"
            kind = "exec"
            command = ["/bin/sh", "-c", "sleep 5"]
            deadline = "1s"
            """)
        var expected = WakeTally()
        (expected.fetches, expected.newData, expected.failures) = (4, 1, 2)
        #expect(await coordinator.runDueCounting(trigger: .manual) == expected)
        #expect(expected.noData == 1)
    }

    @Test func aRunningHandlerIsJoinedNotRunTwice() async throws {
        let directory = try TemporaryDirectory("coordinator")
        defer { directory.remove() }
        let count = directory.file("runs")
        let coordinator = try coordinator(in: directory, handlers: """
            [[handler]]
            name = "slow"
            kind = "exec"
            command = ["/bin/sh", "-c", "echo run >> \(count); sleep 0.5; date +%s%N > \\"$FETCHD_OUTPUT\\""]
            min_interval = "never"
            """)
        async let first = coordinator.fetch("slow", trigger: .manual)
        async let second = coordinator.fetch("slow", trigger: .manual)
        let (a, b) = await (first, second)
        #expect(a?.id == b?.id, "both callers get the one fetch's record")
        #expect(try String(contentsOfFile: count, encoding: .utf8) == "run\n")
    }

    @Test func failuresAndExpiryNeverReplaceTheLatestSnapshot() async throws {
        let directory = try TemporaryDirectory("coordinator")
        defer { directory.remove() }
        let mode = directory.file("mode")
        try "good".write(toFile: mode, atomically: true, encoding: .utf8)
        let coordinator = try coordinator(in: directory, handlers: """
            [[handler]]
            name = "flaky"
            kind = "exec"
            command = ["/bin/sh", "-c", "m=$(cat \(mode)); echo partial-$m > \\"$FETCHD_OUTPUT\\"; [ $m = good ] && exit 0; [ $m = slow ] && sleep 10; exit 7"]
            deadline = "3s"  # room for a loaded machine to start the shell
            min_interval = "never"
            """)
        #expect(await coordinator.fetch("flaky", trigger: .manual)?.result == .newData)
        try "bad".write(toFile: mode, atomically: true, encoding: .utf8)
        let failed = await coordinator.fetch("flaky", trigger: .manual)
        #expect(failed?.result.name == "failed" && failed?.result.reason?.contains("status 7") == true)
        try "slow".write(toFile: mode, atomically: true, encoding: .utf8)
        #expect(await coordinator.fetch("flaky", trigger: .manual)?.result == .expired)
        let latest = try String(contentsOfFile: directory.file("cache/flaky/latest/content"), encoding: .utf8)
        #expect(latest == "partial-good\n")
        let staging = (try? FileManager.default.contentsOfDirectory(atPath: directory.file("cache/.staging"))) ?? []
        #expect(staging.isEmpty, "failed fetches left staged files: \(staging)")
        let history = try coordinator.state.history(of: "flaky", limit: 10).map(\.result)
        #expect(history.map(\.name) == ["expired", "failed", "newData"])
    }

    @Test func oversizedExecOutputFails() async throws {
        let directory = try TemporaryDirectory("coordinator")
        defer { directory.remove() }
        let coordinator = try coordinator(in: directory, handlers: """
            [[handler]]
            name = "big"
            kind = "exec"
            command = ["/bin/sh", "-c", "head -c 5000 /dev/zero > \\"$FETCHD_OUTPUT\\""]
            max_bytes = 4096
            """)
        let record = await coordinator.fetch("big", trigger: .manual)
        #expect(record?.result.name == "failed" && record?.result.reason?.contains("max_bytes") == true)
        #expect(!FileManager.default.fileExists(atPath: directory.file("cache/big/latest")))
    }
}
