import FetchdConfig
import FetchdControl
import FetchdCore
@testable import FetchdDaemon
import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// Push wakes through the coordinator, with real exec handlers and an injected clock for the
/// rate limit: pushes within `push_limit` fetch now with their data, the rest are coalesced into
/// one deferred fetch that the scheduler runs at its time with the newest data.
@Suite(.serialized)
struct PushTests {
    /// An exec handler whose snapshot is the push data it was given (and its trigger).
    static let handlers = """
        [[handler]]
        name = "feed"
        kind = "exec"
        command = ["/bin/sh", "-c", "printf '%s %s' \\"$FETCHD_TRIGGER\\" \\"${FETCHD_PUSH_DATA:-none}\\" > \\"$FETCHD_OUTPUT\\""]
        min_interval = "never"
        push_limit = "2/minute"
        """

    private func content(_ coordinator: FetchCoordinator, _ name: String) async throws -> String {
        let path = coordinator.snapshots.latestContentPath(of: name)
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    @Test func pushesOverTheLimitBecomeOneDeferredFetchThatRunsAtItsTimeWithTheNewestData() async throws {
        let directory = try TemporaryDirectory("push")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, main: "kill_grace = \"1s\"", handlers: Self.handlers)
        let start = Date()
        // N = 2 pushes within the limit fetch now, each with its own data, trigger push.
        for index in 1...2 {
            let admitted = try await coordinator.admitPush("feed", data: "{\"n\":\(index)}", now: start.addingTimeInterval(Double(index)))
            #expect(!admitted.report.deferred && admitted.report.message == "push accepted: fetching now")
            let immediate = try #require(admitted.immediate)
            let record = await coordinator.fetchJoining("feed", trigger: .push, push: immediate)?.record
            #expect(record?.result == .newData && record?.trigger == .push)
            #expect(try await content(coordinator, "feed") == "push {\"n\":\(index)}")
        }
        // Two more are coalesced into one fetch when the first push leaves the window.
        let third = try await coordinator.admitPush("feed", data: "{\"n\":3}", now: start.addingTimeInterval(3)).report
        let fourth = try await coordinator.admitPush("feed", data: "{\"n\":4}", now: start.addingTimeInterval(4)).report
        let due = start.addingTimeInterval(61)
        #expect(third.deferred && fourth.deferred && fourth.coalescedPushes == 2)
        #expect(Self.close(fourth.fetchAt, due), "\(String(describing: fourth.fetchAt)) is not \(due)")
        #expect(fourth.message.hasPrefix("rate limited: coalesced into one fetch at "), "\(fourth.message)")
        // The wake clock wakes for it, status shows it, and nothing runs before its time.
        let wake = await coordinator.wakePlan(now: start.addingTimeInterval(5)).wakeAt
        #expect(Self.close(wake, due), "next wake \(wake), due \(due)")
        let status = try #require(await coordinator.status(markSeen: false).handlers.first)
        #expect(Self.close(status.pendingPushAt, due) && status.pendingPushes == 2 && status.pushLimit == "2/minute")
        #expect(await coordinator.runDue(now: due.addingTimeInterval(-1)).isEmpty)
        // At its time: one fetch, trigger push, the newest data; then nothing is pending. Two
        // wakes at once (a resume and the timer) must not both take it.
        async let firstWake = coordinator.runDue(now: due)
        async let secondWake = coordinator.runDue(now: due)
        let records = await firstWake + secondWake
        #expect(records.map(\.trigger) == [.push] && records.first?.result == .newData)
        #expect(try await content(coordinator, "feed") == "push {\"n\":4}")
        #expect(await coordinator.pushes.pending().isEmpty)
        #expect(await coordinator.runDue(now: due.addingTimeInterval(1)).isEmpty)
        let history = try coordinator.state.history(of: "feed", limit: 10)
        #expect(history.map(\.trigger) == [.push, .push, .push], "N + 1 pushes: N fetches now, one deferred")
    }

    @Test func aPushWaitsForARunningFetchAndThenFetchesWithItsData() async throws {
        let directory = try TemporaryDirectory("push")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, handlers: """
            [[handler]]
            name = "slow"
            kind = "exec"
            command = ["/bin/sh", "-c", "sleep 1; printf '%s %s' \\"$FETCHD_TRIGGER\\" \\"${FETCHD_PUSH_DATA:-none}\\" > \\"$FETCHD_OUTPUT\\""]
            min_interval = "never"
            """)
        async let manual = coordinator.fetch("slow", trigger: .manual)
        var started = false
        for _ in 0..<200 where !started {
            started = await coordinator.isRunning("slow")
            if !started { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(started)
        let immediate = try #require(try await coordinator.admitPush("slow", data: "[1,2]").immediate)
        async let pushed = coordinator.fetchJoining("slow", trigger: .push, push: immediate)?.record
        let (first, second) = await (manual, pushed)
        #expect(first?.trigger == .manual && second?.trigger == .push && first?.id != second?.id,
                "a push never joins a fetch that cannot know its data")
        #expect(try await content(coordinator, "slow") == "push [1,2]")
    }

    @Test func unknownHandlersAreRefused() async throws {
        let directory = try TemporaryDirectory("push")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, handlers: Self.handlers)
        await #expect(throws: PushRefusal.unknownHandler("nope")) {
            try await coordinator.admitPush("nope", data: nil)
        }
    }

    /// Whether `date` is `expected` to the millisecond the database keeps.
    static func close(_ date: Date?, _ expected: Date) -> Bool {
        date.map { abs($0.timeIntervalSince(expected)) < 0.002 } ?? false
    }
}
