import FetchdConfig
import FetchdPlanner
import FetchdState
import Foundation

/// What the scheduling rules make of one `EligibilityInput`: the handlers a wake starts, those
/// due but waiting for their conditions, the deferred pushes to take, when to wake next, and for
/// each handler when it is next eligible and what holds it back. The one place these are
/// decided: the wake (`FetchCoordinator.takeDue`), the daemon's timer (`nextWake`) and the
/// status (`StatusView`) all read it, so what `fetchctl status` says is what the wake does.
/// A pure function of its input.
struct Eligibility: Sendable {
    /// What the rules were applied to.
    let input: EligibilityInput
    /// The handlers to start now, as places in `input.handlers`: the due ones in configuration
    /// order, then the transfers whose partial download may resume; none that runs, that a wake
    /// took, whose conditions do not hold, or for which `global_budget` has no room.
    let ready: [Int]
    /// The handlers due by their schedule that wait, with why: their conditions do not hold,
    /// the power profile is power-saver, or the battery is critically low (`waits(of:)`). They
    /// stay due and run at the first wake after what they wait for holds.
    let deferred: [(index: Int, reason: String)]
    /// The handlers whose deferred push is due and may be taken now (loaded, not running, not
    /// taken by another wake).
    let pushesDue: [String]
    /// The earliest time something becomes eligible that a wake could start: a handler that is
    /// not running and whose conditions hold (by its schedule or plan; `min_interval =
    /// "minimum"` handlers follow the heartbeat instead), a partial transfer resuming, a deferred
    /// push. In the past when something is overdue; nil when nothing is scheduled. The one
    /// notion of "next": the internal timer wakes for it (no later than the heartbeat), the
    /// systemd timer for it when it is in the future. Handlers waiting for their conditions do
    /// not count (a change of conditions wakes them), nor do running ones (their fetch's end
    /// plans again).
    let next: Date?

    /// When the daemon's own timer wakes: at `next`, and at least every heartbeat.
    var nextWake: Date { min(next ?? .distantFuture, input.now.addingTimeInterval(input.heartbeatSeconds)) }

    /// Applies the scheduling rules to `input`.
    init(_ input: EligibilityInput) {
        self.input = input
        let handlers = input.handlers, now = input.now
        let planned = input.plannedDates
        let windows = Scheduler.windows(handlers, states: input.states, now: now, planned: planned,
                                        floors: input.planFloors, sharing: input.sharing)
        let dueBy = input.dueBy
        // The handlers whose window is open; partial transfers resume when their retry time has
        // come, whatever their min_interval.
        var open = Scheduler.openIndices(windows, dueBy: dueBy) { !input.isBusy(handlers[$0].name) }
        var resuming: Set<Int> = []
        if input.transferResumes.values.contains(where: { $0 <= dueBy }) {
            let alreadyOpen = Set(open.map { handlers[$0].name })
            resuming = Set(handlers.indices.filter {
                let name = handlers[$0].name
                return input.transferResumes[name].map { $0 <= dueBy } == true && !alreadyOpen.contains(name)
            })
            open += resuming.sorted()
        }
        let waiting = Self.waitReasons(input)
        var holding: [Int] = []
        var deferred: [(index: Int, reason: String)] = []
        for index in open {
            let name = handlers[index].name
            guard let reason = waiting[name] else { holding.append(index); continue }
            // Deferred once due by its schedule: a plan run early only shares a wake that runs.
            let scheduled = planned[name] == nil ? windows[index]?.opens : windows[index]?.closes
            if resuming.contains(index) || scheduled.map({ $0 <= dueBy }) == true { deferred.append((index, reason)) }
        }
        self.deferred = deferred
        let loaded = input.waitingPushes.isEmpty ? [] : Set(handlers.map(\.name))
        let pushDue = input.waitingPushes.values.filter {
            loaded.contains($0.handler) && !input.running.contains($0.handler) && !input.pushTaken.contains($0.handler)
        }
        pushesDue = pushDue.filter { $0.dueAt <= dueBy }.map(\.handler).sorted()
        let nextPush = pushDue.map(\.dueAt).min()
        // A wake runs the open handlers once one of them can wait no longer, or once it runs
        // something else anyway (a resumed transfer, a deferred push): never a wake for nothing.
        let mustRun = !pushesDue.isEmpty || holding.contains { resuming.contains($0) || windows[$0].map { $0.closes <= dueBy } == true }
        ready = mustRun ? UsagePlanning.withinGlobalBudget(holding, name: { handlers[$0].name }, planned: planned,
                                                           globalUse: input.globalBudget) : []

        // Lazily filtered: with thousands of handlers a filtered copy of their configurations
        // was the largest allocation after each wake.
        let free = handlers.indices.lazy.filter {
            let handler = handlers[$0]
            return !input.isBusy(handler.name) && waiting[handler.name] == nil && Scheduler.hasSchedule(handler, planned: planned)
        }
        let upcoming = free.compactMap { windows[$0]?.closes }.min()
        let resume = input.transferResumes.filter { waiting[$0.key] == nil }.values.min()
        next = [upcoming, nextPush, resume].compactMap { $0 }.min()
    }
}
