import FetchdConfig
@testable import FetchdDaemon
import FetchdTestSupport
import Foundation
import Testing

/// A handler that learns its usage: reported uses are stored, and its next fetch moves to just
/// before the habit they show.
struct UsagePlanningTests {
    private static let handlers = """
        [[handler]]
        name = "news"
        kind = "exec"
        command = ["/bin/sh", "-c", "date +%s%N > \\"$FETCHD_OUTPUT\\""]
        min_interval = "5m"
        usage = ["explicit"]
        budget = "12/day"
        lead = "2m"
        # Two days, not the default one: the test's first fetch happens at the real time, and
        # run between midnight and about 09:00 a one-day staleness bound would fall before the
        # predicted 08:55 use and be planned instead.
        max_staleness = "2d"

        [[handler]]
        name = "plain"
        kind = "exec"
        command = ["/bin/true"]
        min_interval = "1h"
        """

    /// An exec handler named `name` that writes the time, learning from explicit uses when `learns`.
    private static func clockHandler(_ name: String, learns: Bool = true) -> String {
        """
        [[handler]]
        name = "\(name)"
        kind = "exec"
        command = ["/bin/sh", "-c", "date +%s%N > \\"$FETCHD_OUTPUT\\""]
        \(learns ? "usage = [\"explicit\"]" : "")

        """
    }

    /// `hour:minute` local time, `daysAgo` days before `reference`.
    private func local(_ hour: Int, _ minute: Int, daysAgo: Int, from reference: Date) -> Date {
        let calendar = Calendar.current
        let day = calendar.date(byAdding: .day, value: -daysAgo, to: reference)!
        return calendar.date(bySettingHour: hour, minute: minute, second: 0, of: day)!
    }

    @Test func reportedUsesMoveTheNextFetchJustBeforeTheHabit() async throws {
        let directory = try TemporaryDirectory("usage")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, handlers: Self.handlers)
        let handler = try #require(await coordinator.config.handler(named: "news"))
        // Never fetched: due at once, like any new handler.
        #expect(await coordinator.plannedFetch(handler)?.reason == "first fetch")
        #expect(await coordinator.fetch("news", trigger: .manual)?.result == .newData)
        // Cold start: a plain interval (24 h / budget), no habit yet.
        #expect(await coordinator.plannedFetch(handler)?.reason.hasPrefix("cold start") == true)

        // A week of use at 08:55 (every day of the week, so the test holds on any date), then 20:00.
        let evening = local(20, 0, daysAgo: 0, from: Date())
        for daysAgo in 1...7 {
            guard case .recorded = await coordinator.recordUse("news", source: .explicit,
                                                               at: local(8, 55, daysAgo: daysAgo, from: evening)) else {
                Issue.record("the use was not recorded"); return
            }
        }
        let decision = try #require(await coordinator.plannedFetch(handler, now: evening))
        let components = Calendar.current.dateComponents([.hour, .minute], from: decision.date)
        let minute = components.hour! * 60 + components.minute!
        #expect(decision.date > evening && decision.date < evening.addingTimeInterval(14 * 3600), "\(decision)")
        #expect((8 * 60 + 20...8 * 60 + 55).contains(minute), "\(decision)")
        #expect(decision.reason.contains("predicted use") && decision.reason.contains("08:"), "\(decision.reason)")

        // A handler without usage learning keeps min_interval, and a use of it is still stored.
        let plain = try #require(await coordinator.config.handler(named: "plain"))
        #expect(await coordinator.plannedFetch(plain) == nil)
        #expect(await coordinator.recordUse("plain", source: .explicit) == .recorded(next: nil))
        #expect(await coordinator.recordUse("nope", source: .explicit) == .unknownHandler)
    }

    @Test func theGlobalBudgetHoldsBackEveryPlannedHandler() async throws {
        let directory = try TemporaryDirectory("usage")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, main: "global_budget = \"2/day\"",
                                                     handlers: ["a", "b", "c"].map { Self.clockHandler($0) }.joined())
        let first = Date()
        // Three never-run handlers are due, but the shared budget has room for two.
        #expect(await coordinator.runDue(trigger: .manual).count == 2)
        #expect(await coordinator.runDue(trigger: .manual).isEmpty)
        // Two fetches in the last 24 h: the shared budget is spent until the first is a day old.
        let input = await coordinator.eligibilityInput(now: Date())
        let floor = try #require(UsagePlanning.floor(of: input.globalBudget))
        #expect(floor > first.addingTimeInterval(86_400 - 60) && floor < Date().addingTimeInterval(86_400))
        let planned = input.plannedDates
        #expect(planned.count == 3 && planned.values.allSatisfy { $0 >= floor }, "\(planned)")
        let status = await coordinator.status(markSeen: false)
        #expect(status.handlers.allSatisfy { $0.planReason?.contains("global_budget spent") == true })
    }

    /// A scheduled fetch of a handler planned from its usage is recorded as `usage`, so history
    /// and the journal tell it from a plain timer fetch.
    @Test func plannedFetchesAreRecordedWithTheUsageTrigger() async throws {
        let directory = try TemporaryDirectory("usage")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(
            in: directory, handlers: Self.clockHandler("planned") + Self.clockHandler("plain", learns: false))
        let records = await coordinator.runDue()
        let triggers = Dictionary(uniqueKeysWithValues: records.map { ($0.handler, $0.trigger) })
        #expect(triggers == ["planned": .usage, "plain": .timer])
    }
}
