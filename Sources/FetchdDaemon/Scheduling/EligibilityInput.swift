import FetchdConfig
import FetchdPlanner
import FetchdPush
import FetchdState
import Foundation

/// Everything the scheduling rules read, taken by the coordinator in one step at one instant
/// (`FetchCoordinator.eligibilityInput(now:)`): the configuration, the stored states, what runs,
/// the conditions, the usage plans, the transfers waiting to resume and the deferred pushes.
/// `Eligibility` decides from it alone, so the wake, the next wake and the status rows cannot
/// disagree, and tests build one by hand with no actor, file or clock.
struct EligibilityInput: Sendable {
    /// The instant the rules are applied at.
    var now: Date
    /// The handlers in force, in configuration order.
    var handlers: [HandlerConfig]
    /// The longest the daemon sleeps between two wakes (`heartbeat`, seconds).
    var heartbeatSeconds: Double
    /// The stored states as the scheduler sees them (a clock stepped back accounted for).
    var states: [String: HandlerState] = [:]
    /// The handlers being fetched now.
    var running: Set<String> = []
    /// The handlers a wake took and has not started yet.
    var takenByWake: Set<String> = []
    /// The handlers whose deferred push a wake took and has not finished.
    var pushTaken: Set<String> = []
    /// Why each handler's scheduled fetch would wait for its conditions (network, power,
    /// battery); handlers whose conditions hold are absent.
    var unmetConditions: [String: String] = [:]
    /// Whether power-profiles-daemon's active profile is power-saver: the scheduled fetches of
    /// handlers with `power_saver = "defer"` wait.
    var powerSaver = false
    /// The lowest battery charge, in percent, while the battery is critically low
    /// (`PowerState.criticallyLow`): every scheduled fetch waits. Nil otherwise.
    var criticalBatteryPercent: Int?
    /// The usage planner's next fetch of each handler that learns its usage, held back (and its
    /// reason extended) while `global_budget` is spent.
    var plans: [String: FetchPlanner.Decision] = [:]
    /// The earliest each usage-planned handler may run at all (its `min_interval` and its own
    /// budget): a wake may run it a little before its plan, never before this.
    var planFloors: [String: Date] = [:]
    /// How much of its own budget each usage-planned handler used, as its plan counted it.
    var budgets: [String: UsagePlanning.BudgetUse] = [:]
    /// The usage-planned fetches of the last 24 hours and `global_budget`, when one is set.
    var globalBudget: UsagePlanning.GlobalBudgetUse?
    /// When each transfer handler's partial download may resume, for those neither running nor
    /// taken by a wake.
    var transferResumes: [String: Date] = [:]
    /// The deferred pushes a wake may take, by handler (not those this daemon fetches at once).
    var waitingPushes: [String: PendingPush] = [:]
    /// How far fetches may move to share wakes: the daemon's tolerance, or `.none` for the
    /// bench's run without sharing.
    var sharing: WakeSharing = .standard

    /// Whether `name` runs now or a wake took it: no wake takes it again.
    func isBusy(_ name: String) -> Bool { running.contains(name) || takenByWake.contains(name) }

    /// The latest time that counts as due now: `now` plus the scheduler's tolerance, so the rows
    /// and the wake draw the same line between "due" and "held".
    var dueBy: Date { now.addingTimeInterval(Scheduler.dueTolerance) }

    /// The planned time of each usage-planned handler, as the scheduler reads it.
    var plannedDates: [String: Date] { plans.mapValues(\.date) }
}
