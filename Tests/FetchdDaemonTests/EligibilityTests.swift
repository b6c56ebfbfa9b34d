import FetchdConfig
import FetchdCore
@testable import FetchdDaemon
import FetchdPlanner
import FetchdPush
import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// The one eligibility computation: inputs built by hand, no actor, file or clock; and a
/// coordinator's wake reading the handler states once.
struct EligibilityTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func handler(_ name: String, every seconds: Double? = 60, options: HandlerConfig.Options = .doNothing,
                         enabled: Bool = true) -> HandlerConfig {
        var handler = HandlerConfig(name: name, options: options)
        handler.minInterval = seconds.map { .seconds($0) } ?? .never
        handler.enabled = enabled
        return handler
    }

    private func state(_ name: String, attemptedAgo seconds: Double, notBefore: Date? = nil) -> HandlerState {
        var state = HandlerState(name: name)
        state.lastAttemptAt = now.addingTimeInterval(-seconds)
        state.notBefore = notBefore
        return state
    }

    private func input(_ handlers: [HandlerConfig]) -> EligibilityInput {
        EligibilityInput(now: now, handlers: handlers, heartbeatSeconds: 3600)
    }

    @Test func aWakeStartsWhatIsDueAndNothingBusyOrWaiting() {
        var input = input(["due", "running", "taken", "unplugged", "later", "asked"].map { handler($0) }
                          + [handler("never", every: nil), handler("off", enabled: false)])
        input.states = ["later": state("later", attemptedAgo: 10), "due": state("due", attemptedAgo: 61)]
        input.running = ["running"]
        input.takenByWake = ["taken"]
        input.unmetConditions = ["unplugged": "waiting for AC power"]
        let eligibility = Eligibility(input)
        let names = eligibility.ready.map { input.handlers[$0].name }
        #expect(names == ["due", "asked"])
        #expect(eligibility.deferred.map { input.handlers[$0.index].name } == ["unplugged"])
        #expect(eligibility.deferred.first?.reason == "waiting for AC power")
        // Overdue handlers ask for a wake now; the deferred, running and taken ones do not.
        #expect(eligibility.nextWake <= now)
        input.states["due"] = state("due", attemptedAgo: 0)
        input.states["asked"] = state("asked", attemptedAgo: 0)
        #expect(Eligibility(input).next == now.addingTimeInterval(56), "later's min_interval ends at 50 s, its wait for a shared wake at 56 s")
    }

    @Test func theNextWakeLeavesOutDeferredHandlersAndKeepsTheHeartbeat() {
        var input = input([handler("unplugged"), handler("later", every: 600)])
        input.unmetConditions = ["unplugged": "waiting for AC power"]
        input.states = ["later": state("later", attemptedAgo: 100)]
        // Its min_interval ends at 500 s; it may wait a tenth of it (60 s) for a shared wake.
        #expect(Eligibility(input).nextWake == now.addingTimeInterval(560))
        #expect(Eligibility(input).next == now.addingTimeInterval(560))
        input.heartbeatSeconds = 60
        #expect(Eligibility(input).nextWake == now.addingTimeInterval(60))
        input.transferResumes = ["later": now.addingTimeInterval(30)]
        #expect(Eligibility(input).nextWake == now.addingTimeInterval(30), "a partial transfer resumes then")
        input.unmetConditions["later"] = "waiting for an unmetered network"
        #expect(Eligibility(input).nextWake == now.addingTimeInterval(60), "not while its conditions do not hold")
        #expect(Eligibility(input).next == nil, "nothing for the systemd timer to wake for")
    }

    @Test func aPartialTransferResumesWhateverItsMinInterval() {
        var input = input([handler("t", every: 86_400, options: .transfer(TransferOptions(request: HTTPOptions(url: "https://example.com/t.iso"))))])
        input.states = ["t": state("t", attemptedAgo: 100)]
        input.transferResumes = ["t": now.addingTimeInterval(-1)]
        #expect(Eligibility(input).ready == [0])
        input.transferResumes = ["t": now.addingTimeInterval(20)]
        let eligibility = Eligibility(input)
        #expect(eligibility.ready.isEmpty)
        #expect(eligibility.row(of: input.handlers[0]).holds.contains(.transferRetry(until: now.addingTimeInterval(20))))
    }

    @Test func theSharedBudgetTakesTheEarliestPlannedFirst() {
        var input = input([handler("a"), handler("b"), handler("c")])
        input.plans = ["a": .init(date: now.addingTimeInterval(-5), reason: "predicted use"),
                       "b": .init(date: now.addingTimeInterval(-50), reason: "predicted use")]
        input.globalBudget = (recent: [now.addingTimeInterval(-3600)], budget: 2)
        // One fetch left in the shared budget: the earlier plan gets it; `c` is not planned.
        #expect(Eligibility(input).ready.map { input.handlers[$0].name } == ["b", "c"])
    }

    @Test func deferredPushesAreTakenOnlyWhenDueAndFree() {
        var input = input([handler("a", every: nil), handler("b", every: nil), handler("c", every: nil)])
        let push = { (name: String, due: Double) in
            PendingPush(handler: name, dueAt: self.now.addingTimeInterval(due), data: nil, receivedAt: self.now, pushes: 2)
        }
        input.waitingPushes = ["a": push("a", -1), "b": push("b", -1), "c": push("c", 40), "gone": push("gone", -1)]
        input.running = ["b"]
        var eligibility = Eligibility(input)
        #expect(eligibility.pushesDue == ["a"], "not while running, nor for a handler no longer loaded")
        #expect(eligibility.next == now.addingTimeInterval(-1), "a's push is overdue")
        #expect(eligibility.row(of: input.handlers[2]).nextEligibleAt == now.addingTimeInterval(40))
        #expect(eligibility.row(of: input.handlers[2]).holds == [.onRequestOnly, .pushLimit(until: now.addingTimeInterval(40))])
        input.pushTaken = ["a"]
        eligibility = Eligibility(input)
        #expect(eligibility.pushesDue.isEmpty, "a push a wake took is not taken twice")
    }

    @Test func eachRowSaysWhatHoldsItBack() {
        var input = input([handler("interval", every: 600), handler("server"), handler("planned"),
                           handler("off", enabled: false), handler("unplugged")])
        let floor = now.addingTimeInterval(900)
        input.states = ["interval": state("interval", attemptedAgo: 100),
                        "server": state("server", attemptedAgo: 100, notBefore: floor)]
        input.plans = ["planned": .init(date: now.addingTimeInterval(300), reason: "predicted use 12:05")]
        input.unmetConditions = ["unplugged": "waiting for AC power", "off": "waiting for AC power"]
        let eligibility = Eligibility(input)
        let rows = input.handlers.map(eligibility.row(of:))
        #expect(rows[0].holds == [.minInterval(until: now.addingTimeInterval(500))])
        #expect(rows[0].nextEligibleAt == now.addingTimeInterval(500))
        #expect(rows[1].holds == [.serverFloor(until: floor)])
        #expect(rows[1].nextEligibleAt == floor)
        #expect(rows[2].holds == [.plan(until: now.addingTimeInterval(300), reason: "predicted use 12:05")])
        #expect(rows[3].holds == [.disabled], "a handler fetched only on request waits for no condition")
        #expect(rows[4].holds == [.conditions("waiting for AC power")] && rows[4].waitingFor == "waiting for AC power")
        #expect(rows[4].nextEligibleAt == now, "due, but deferred")
    }

    /// A usage-planned handler's row names what bounds its plan: a retry after failures, its own
    /// budget, the shared one.
    @Test func aPlannedRowNamesItsBudgetsAndItsBackoff() {
        var input = input([handler("retry"), handler("spent"), handler("shared")])
        var retry = FetchPlanner.Decision(date: now.addingTimeInterval(120), reason: "failed 2 time(s) in a row")
        retry.retryAfterFailures = 2
        let freesAt = now.addingTimeInterval(3600)
        input.plans = ["retry": retry, "spent": .init(date: freesAt, reason: "predicted use"),
                       "shared": .init(date: now.addingTimeInterval(60), reason: "predicted use")]
        input.budgets = ["spent": .init(used: 4, perDay: 4, freesAt: freesAt), "retry": .init(used: 1, perDay: 4)]
        let eligibility = Eligibility(input)
        #expect(eligibility.row(of: input.handlers[0]).holds == [.backoff(until: now.addingTimeInterval(120), failures: 2)])
        #expect(eligibility.row(of: input.handlers[1]).holds == [.budget(until: freesAt, used: 4, perDay: 4),
                                                                .plan(until: freesAt, reason: "predicted use")])
        let dayAgo = now.addingTimeInterval(-86_000)
        input.globalBudget = ([dayAgo], 1)
        #expect(Eligibility(input).row(of: input.handlers[2]).holds.first == .globalBudget(until: dayAgo.addingTimeInterval(86_400), used: 1, budget: 1))
    }

    /// A time within the wake's tolerance of now counts as now in the rows too: a handler the
    /// wake starts is never shown as held by a floor a fraction of a second away.
    @Test func theRowsDrawTheWakesLineBetweenDueAndHeld() {
        let within = Scheduler.dueTolerance / 2, beyond = Scheduler.dueTolerance * 2
        var input = input([handler("floor"), handler("interval"), handler("heldFloor"), handler("heldInterval")])
        // The line at the floor itself, with no wait for a shared wake (which moves it, for rows
        // and wake alike, to the end of the window: theRowsAgreeWithTheWake).
        input.sharing = .none
        input.states = ["floor": state("floor", attemptedAgo: 600, notBefore: now.addingTimeInterval(within)),
                        "interval": state("interval", attemptedAgo: 60 - within),
                        "heldFloor": state("heldFloor", attemptedAgo: 600, notBefore: now.addingTimeInterval(beyond)),
                        "heldInterval": state("heldInterval", attemptedAgo: 60 - beyond)]
        let eligibility = Eligibility(input)
        #expect(eligibility.ready == [0, 1])
        #expect(input.handlers.map { eligibility.row(of: $0).holds.count } == [0, 0, 1, 1])
    }

    /// The rows and the wake come from one computation: over many random inputs, a handler
    /// held by nothing is started (or deferred when only its conditions hold it), and one that
    /// is started is held by nothing but a plan within the early window or a wait for a shared
    /// wake (both `WakeSharing`).
    @Test func theRowsAgreeWithTheWake() {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let handlers = (0..<8).map { index in
                handler("h\(index)", every: [nil, 0, 60, 600].randomElement(using: &random)!,
                        enabled: Int.random(in: 0..<6, using: &random) > 0)
            }
            var input = input(handlers)
            for handler in handlers {
                let name = handler.name
                switch Int.random(in: 0..<8, using: &random) {
                case 0: input.running.insert(name)
                case 1: input.unmetConditions[name] = "waiting for AC power"
                case 2:
                    var plan = FetchPlanner.Decision(date: now.addingTimeInterval(.random(in: -300...300, using: &random)), reason: "p")
                    if Bool.random(using: &random) { plan.retryAfterFailures = 2 }
                    input.plans[name] = plan
                case 3:
                    // Near now as often as not: the line between due and held is where rows and wake could part.
                    let offset = Bool.random(using: &random) ? Double.random(in: -60...60, using: &random) : .random(in: -0.3...0.3, using: &random)
                    input.states[name] = state(name, attemptedAgo: 30, notBefore: now.addingTimeInterval(offset))
                default: if Bool.random(using: &random) { input.states[name] = state(name, attemptedAgo: .random(in: 0...900, using: &random)) }
                }
            }
            let eligibility = Eligibility(input)
            for (index, handler) in handlers.enumerated() {
                let holds = eligibility.row(of: handler).holds
                let started = eligibility.ready.contains(index)
                let deferred = eligibility.deferred.contains { $0.index == index }
                if holds.isEmpty { #expect(started, "\(handler.name) held by nothing was not started: \(input)") }
                if holds == [.conditions("waiting for AC power")] { #expect(deferred) }
                if started {
                    #expect(holds.allSatisfy {
                        switch $0 {
                        case .plan(let until, _), .backoff(let until, _): until <= now.addingTimeInterval(WakeSharing.standard.earlySeconds)
                        case .sharedWake: true
                        default: false
                        }
                    }, "\(handler.name) started while held: \(holds)")
                }
            }
        }
    }

    @Test func aWakeReadsTheHandlerStatesOnce() async throws {
        let directory = try TemporaryDirectory("eligibility")
        defer { directory.remove() }
        let handlers = ["a", "b", "c"].map {
            "[[handler]]\nname = \"\($0)\"\nkind = \"exec\"\nmin_interval = \"minimum\"\ncommand = [\"/bin/true\"]\n\n"
        }.joined()
        let coordinator = try TestConfig.coordinator(in: directory, handlers: handlers)
        // What the wake clock does around each wake: the wake, then one plan.
        for wake in 0..<3 {
            let before = coordinator.state.stateReads
            #expect(await coordinator.runDueCounting(trigger: .timer).fetches == 3)
            _ = await coordinator.wakePlan()
            // The first wake reads them before anything is kept; each later one once, after its results.
            #expect(coordinator.state.stateReads - before == (wake == 0 ? 2 : 1))
        }
    }
}
