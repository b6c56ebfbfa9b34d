import FetchdConfig
import FetchdCore
import FetchdHandlers
import FetchdState
import Foundation
import Logging
import Synchronization

/// Failure alerts: when a handler has failed (`failed` or `expired`) `alert_after` times in a
/// row it is failing, and its alert program (`on_failure`: the handler's, else the main
/// file's) runs once; when it next succeeds it has recovered, and the program runs once more.
/// Each event is journaled with its own MESSAGE_ID (`MessageID.handlerFailing`,
/// `.handlerRecovered`), program or not.
///
/// The count is the state database's `consecutive_failures`, the one the back-off reads. A
/// streak alerted on is kept in the database (`alert_streak`) until the recovery, so after a
/// restart the same streak does not alert again and its recovery still runs. The program runs
/// within `AlertRateLimit`, counted in `alert_run`, which survives restarts too.
///
/// Nothing here holds up a wake: results are looked at on a serial queue of this object's own
/// (the database reads and writes), and the programs run in detached tasks, each under its
/// handler's deadline, sandbox and user like an exec handler's program (`HandlerFactory.makeProgram`,
/// through fetchd-runas under the system unit).
final class FailureAlerts: Sendable {
    private struct Memory {
        /// The streaks alerted on, by handler; nil until read from the database.
        var streaks: [String: AlertStreak]?
        /// The alert programs running, by a number of their own.
        var running: [Int: Task<Void, Never>] = [:]
        var nextRun = 0
        /// Set at shutdown: no program starts any more.
        var stopping = false
    }

    private let state: StateStore
    private let runner: FetchRunner
    /// Where alerts are journaled.
    let logger: Logger
    private let memory = Mutex(Memory())
    /// How often programs may run.
    let rateLimit = AlertRateLimit()
    private let queue = DispatchQueue(label: "fetchd-alerts")

    /// Alerts over `state`'s counts, running programs with `runner`.
    init(state: StateStore, runner: FetchRunner, logger: Logger) {
        self.state = state
        self.runner = runner
        self.logger = logger
    }

    /// Looks at `record`, just recorded for `handler`, later and off the caller: a failure may
    /// start an alert, a success end one. Returns at once.
    func note(_ record: CompletedFetch, of handler: HandlerConfig, daemon: DaemonConfig) {
        // Most results are successes of handlers that were not failing: nothing to queue.
        let skip = memory.withLock { memory in
            !record.result.isFailure && memory.streaks.map { $0[handler.name] == nil } == true
        }
        guard !skip else { return }
        queue.async { self.decide(record, of: handler, daemon: daemon) }
    }

    /// Returns once every result noted so far is looked at and every program started is done.
    func settled() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
        while let task = memory.withLock({ $0.running.values.first }) { await task.value }
    }

    /// Stops the programs running (SIGTERM, SIGKILL after the kill grace) and starts no more:
    /// at shutdown. Returns once they have ended.
    func stop() async {
        let tasks = memory.withLock { memory in
            memory.stopping = true
            return Array(memory.running.values)
        }
        tasks.forEach { $0.cancel() }
        for task in tasks { await task.value }
    }

    private func streaks() -> [String: AlertStreak] {
        if let known = memory.withLock({ $0.streaks }) { return known }
        let read: [String: AlertStreak]
        do { read = try state.alerts.streaks() } catch {
            logger.error("cannot read the failure alerts in \(state.path): \(error); failing handlers alert again")
            read = [:]
        }
        return memory.withLock { memory in
            if memory.streaks == nil { memory.streaks = read }
            return memory.streaks ?? read
        }
    }

    private func decide(_ record: CompletedFetch, of handler: HandlerConfig, daemon: DaemonConfig) {
        let known = streaks()[handler.name]
        if record.result.isFailure {
            guard known == nil else { return }  // alerted on already: once per streak
            let stored: HandlerState?
            do { stored = try state.state(of: handler.name) } catch {
                logger.error("\(handler.name): cannot read its failure count: \(error)", metadata: ["handler": "\(handler.name)"])
                return
            }
            guard let stored, stored.consecutiveFailures >= handler.alertAfter else { return }
            raise(record, of: handler, stored: stored, daemon: daemon)
        } else if let known {
            recover(record, of: handler, streak: known, daemon: daemon)
        }
    }

    /// The handler just became failing: keep the streak, journal it, run the program if allowed.
    private func raise(_ record: CompletedFetch, of handler: HandlerConfig, stored: HandlerState, daemon: DaemonConfig) {
        let now = Date()
        let command = Self.command(of: handler, daemon: daemon)
        let limit = rateLimit
        let lookback = now.addingTimeInterval(-limit.lookbackSeconds)
        var refusal: String?
        if command == nil {
            refusal = Self.noProgram(handler)
        } else {
            do { refusal = limit.refusal(for: handler.name, at: now, runs: try state.alerts.runs(since: lookback)) } catch {
                refusal = "cannot read when alerts ran (\(error))"
            }
        }
        let streak = AlertStreak(handler: handler.name, alertedAt: now, lastSuccessAt: stored.lastSuccessAt,
                                 programRan: refusal == nil)
        do { try state.alerts.begin(streak, forgettingRunsBefore: lookback) } catch {
            logger.error("\(handler.name): cannot record its failure alert in \(state.path): \(error); it may alert again after a restart",
                         metadata: ["handler": "\(handler.name)"])
        }
        memory.withLock { $0.streaks?[handler.name] = streak }
        let alert = FailureAlert(event: .failing, result: record.result.name,
                                 reason: record.result.reason.map(FailureAlert.reasonText),
                                 failures: stored.consecutiveFailures,
                                 lastSuccess: stored.lastSuccessAt.map { Int($0.timeIntervalSince1970) })
        journal(alert, of: handler.name, program: refusal.map { "not run: \($0)" } ?? "run")
        if refusal == nil, let command { start(command, alert: alert, for: handler, trigger: record.trigger, daemon: daemon) }
    }

    /// The failing handler succeeded: forget the streak, journal it, run the program if the
    /// failing alert ran it.
    private func recover(_ record: CompletedFetch, of handler: HandlerConfig, streak: AlertStreak, daemon: DaemonConfig) {
        let failures = (try? state.failures(before: record)) ?? handler.alertAfter
        do { try state.alerts.end(handler.name) } catch {
            logger.error("\(handler.name): cannot record its recovery in \(state.path): \(error); it may recover again after a restart",
                         metadata: ["handler": "\(handler.name)"])
        }
        memory.withLock { $0.streaks?[handler.name] = nil }
        let command = Self.command(of: handler, daemon: daemon)
        let alert = FailureAlert(event: .recovered, result: record.result.name, reason: nil, failures: max(1, failures),
                                 lastSuccess: streak.lastSuccessAt.map { Int($0.timeIntervalSince1970) })
        let program: String = if command == nil { "not run: \(Self.noProgram(handler))" }
            else if !streak.programRan { "not run: the failing alert did not run it" }
            else { "run" }
        journal(alert, of: handler.name, program: program)
        if streak.programRan, let command { start(command, alert: alert, for: handler, trigger: record.trigger, daemon: daemon) }
    }

    /// The program `handler`'s alerts run; none for a handler registered over D-Bus (programs
    /// run only from files an administrator wrote).
    private static func command(of handler: HandlerConfig, daemon: DaemonConfig) -> [String]? {
        handler.registeredBy == nil ? handler.alertCommand(daemon: daemon) : nil
    }

    private static func noProgram(_ handler: HandlerConfig) -> String {
        handler.registeredBy == nil ? "no on_failure is configured" : "handlers registered over D-Bus run no programs"
    }

    /// Runs the alert program in a task of its own, under the handler's deadline, and logs how it went.
    private func start(_ command: [String], alert: FailureAlert, for handler: HandlerConfig, trigger: FetchTrigger,
                       daemon: DaemonConfig) {
        let program = HandlerFactory.makeProgram(handler, command: command, alert: alert, daemon: daemon)
        let seconds = handler.deadlineSeconds
        let context = FetchContext(handlerName: handler.name, trigger: trigger, outputPath: "/dev/null",
                                   previousSnapshotPath: nil, deadline: .now + .milliseconds(Int64(seconds * 1000)),
                                   wallDeadline: Date().addingTimeInterval(seconds))
        let (runner, logger, name) = (runner, logger, handler.name)
        memory.withLock { memory in
            guard !memory.stopping else { return }
            let number = memory.nextRun
            memory.nextRun += 1
            memory.running[number] = Task.detached { [self] in
                let outcome = await runner.run(program, context: context)
                Self.log(outcome, of: name, event: alert.event, seconds: seconds, logger: logger)
                self.memory.withLock { _ = $0.running.removeValue(forKey: number) }
            }
        }
    }
}
