import FetchdConfig
import FetchdControl
import FetchdCore
@testable import FetchdDaemon
import FetchdTestSupport
import Foundation
import Testing

/// "Why didn't NAME fetch?": for each cause a new administrator meets, a daemon set up with it,
/// the answer `fetchctl status NAME` gets (`FetchCoordinator.status(of:)`), and the wake on the
/// same states, which must agree with it: held back, it fetches nothing; with nothing holding
/// it back, it fetches.
@Suite(.serialized)
struct WhyNotFetchedTests {
    /// An exec handler named `h` that writes `1` (or fails, `failing`), with `keys` added.
    private static func handler(_ keys: String, failing: Bool = false) -> String {
        """
        [[handler]]
        name = "h"
        kind = "exec"
        command = ["/bin/sh", "-c", "\(failing ? "exit 1" : "echo 1 > \\\"$FETCHD_OUTPUT\\\"")"]
        \(keys)
        """
    }

    /// `h`'s reasons now, and what a wake at the same instant does.
    private func answer(_ coordinator: FetchCoordinator) async throws -> (holds: [HoldReport], fetched: Int) {
        let status = try #require(await coordinator.status(of: "h"))
        let holds = try #require(status.handlers.first?.holds)
        let fetched = await coordinator.runDue(now: Date()).count
        return (holds, fetched)
    }

    /// Sets up a coordinator from `main` and `handler`, runs `prepare`, and checks that the
    /// answer names `cause` (with a date when `dated`) and the wake fetches nothing. Returns the
    /// answer.
    @discardableResult
    private func check(_ cause: HoldReport.Cause, dated: Bool = true, main: String = "", handler: String,
                       prepare: (FetchCoordinator) async throws -> Void = { _ in }) async throws -> HandlerStatus? {
        let directory = try TemporaryDirectory("why")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, main: main, handlers: handler)
        try await prepare(coordinator)
        let status = await coordinator.status(of: "h")?.handlers.first
        let (holds, fetched) = try await answer(coordinator)
        let hold = holds.first { $0.cause == cause }
        #expect(hold != nil, "\(cause) among \(holds)")
        if dated { #expect((hold?.until ?? .distantPast) > Date(), "\(cause) is dated in the future: \(String(describing: hold))") }
        #expect(fetched == 0, "\(cause): the wake holds it back too")
        return status
    }

    /// One wake, so that `h` has a recorded attempt.
    private static func fetchOnce(_ coordinator: FetchCoordinator) async throws {
        #expect(await coordinator.runDue(now: Date()).count == 1)
    }

    @Test func nothingHoldsANewHandlerBackAndTheWakeFetchesIt() async throws {
        let directory = try TemporaryDirectory("why")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, handlers: Self.handler("min_interval = \"1h\""))
        let (holds, fetched) = try await answer(coordinator)
        #expect(holds.isEmpty && fetched == 1, "\(holds)")
        let recent = try #require(await coordinator.status(of: "h")?.handlers.first)
        #expect(recent.definedIn?.hasSuffix(".toml:1") == true, "\(String(describing: recent.definedIn))")
        #expect(await coordinator.status(of: "nope") == nil)
    }

    @Test func disabled() async throws {
        try await check(.disabled, dated: false, handler: Self.handler("enabled = false"))
    }

    @Test func onRequestOnly() async throws {
        try await check(.onRequest, dated: false, handler: Self.handler("min_interval = \"never\""))
    }

    @Test func minInterval() async throws {
        try await check(.minInterval, handler: Self.handler("min_interval = \"1h\""), prepare: Self.fetchOnce)
    }

    /// Due a minute ago, it may wait up to 6 minutes (a tenth of 1 h) for a wake that runs
    /// another fetch: the wake alone runs nothing.
    @Test func sharedWake() async throws {
        try await check(.sharedWake, handler: Self.handler("min_interval = \"1h\"")) { coordinator in
            let attempt = Date().addingTimeInterval(-3_660)
            try coordinator.state.record(CompletedFetch(handler: "h", trigger: .timer, startedAt: attempt,
                                                        finishedAt: attempt, result: .newData))
        }
    }

    @Test func serverFloor() async throws {
        try await check(.serverFloor, handler: Self.handler("min_interval = \"minimum\"")) { coordinator in
            var fetch = CompletedFetch(handler: "h", trigger: .timer, startedAt: Date().addingTimeInterval(-1),
                                       finishedAt: Date(), result: .noData)
            fetch.notBefore = Date().addingTimeInterval(3600)  // Retry-After: 3600
            _ = try coordinator.state.record(fetch)
        }
    }

    @Test func usagePlan() async throws {
        try await check(.planned, handler: Self.handler("usage = [\"explicit\"]\nmin_interval = \"5m\""), prepare: Self.fetchOnce)
    }

    @Test func backoffAfterFailures() async throws {
        try await check(.backoff, handler: Self.handler("usage = [\"explicit\"]", failing: true), prepare: Self.fetchOnce)
    }

    @Test func ownBudgetSpent() async throws {
        let status = try await check(.budget, handler: Self.handler("usage = [\"explicit\"]\nbudget = \"1/day\"")) { coordinator in
            try await Self.fetchOnce(coordinator)
            _ = await coordinator.fetch("h", trigger: .manual)  // a fetch asked for counts too
        }
        #expect(status?.budget == BudgetReport(used: 2, perDay: 1), "\(String(describing: status?.budget))")
    }

    @Test func globalBudgetSpent() async throws {
        try await check(.globalBudget, main: "global_budget = \"1/day\"",
                        handler: Self.handler("usage = [\"explicit\"]\nmin_interval = \"1m\""), prepare: Self.fetchOnce)
    }

    @Test func conditionsUnmet() async throws {
        let directory = try TemporaryDirectory("why-power")
        defer { directory.remove() }
        let supplies = try FakePowerSupplies(directory)
        try supplies.set("AC", ["type": "Mains", "online": "0"])
        try await check(.conditions, dated: false, main: "power_supply_dir = \"\(supplies.path)\"",
                        handler: Self.handler("power = \"ac\""))
    }

    @Test func aPushOverItsLimit() async throws {
        try await check(.pushLimit, handler: Self.handler("min_interval = \"1h\"\npush_limit = \"1/hour\"")) { coordinator in
            try await Self.fetchOnce(coordinator)
            _ = try await coordinator.admitPush("h", data: nil)   // within the limit: counted
            let held = try await coordinator.admitPush("h", data: nil)
            #expect(held.immediate == nil, "the second push in the hour is held")
        }
    }
}
