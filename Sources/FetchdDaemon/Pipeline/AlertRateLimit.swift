import FetchdCore
import Foundation

/// How often failure alerts may run their program: at most once per handler per
/// `handlerIntervalSeconds` (a handler that keeps recovering and failing again alerts once an
/// hour, not at every streak), and at most `maxPerWindow` runs of all handlers together per
/// rolling `windowSeconds` (a network outage failing every handler at once alerts ten times,
/// not once per handler). Only failing alerts count and are limited: a recovery runs the
/// program only after a failing alert that ran, so it is bounded by the same limits. An alert
/// over the limit is still journaled, saying so.
struct AlertRateLimit: Sendable {
    /// The least time between two alert runs of one handler, in seconds.
    var handlerIntervalSeconds = Defaults.alertHandlerIntervalSeconds
    /// The most alert runs of all handlers per window.
    var maxPerWindow = Defaults.alertMaxPerHour
    /// The window of `maxPerWindow`, in seconds.
    var windowSeconds = Defaults.alertWindowSeconds

    /// How far back runs matter.
    var lookbackSeconds: Double { max(handlerIntervalSeconds, windowSeconds) }

    /// Why an alert of `handler` at `now` may not run its program, given the earlier runs
    /// (`runs`, any order); nil when it may.
    func refusal(for handler: String, at now: Date, runs: [(handler: String, at: Date)]) -> String? {
        if let last = runs.filter({ $0.handler == handler }).map(\.at).max(),
           now.timeIntervalSince(last) < handlerIntervalSeconds {
            return "its alert ran \(HumanDuration.format(seconds: now.timeIntervalSince(last))) ago; "
                + "at most one per \(HumanDuration.format(seconds: handlerIntervalSeconds)) per handler"
        }
        let recent = runs.filter { now.timeIntervalSince($0.at) < windowSeconds }.count
        if recent >= maxPerWindow {
            return "\(recent) alerts ran in the last \(HumanDuration.format(seconds: windowSeconds)), "
                + "the most for all handlers together"
        }
        return nil
    }
}
