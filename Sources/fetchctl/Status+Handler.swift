import FetchdControl
import FetchdCore
import Foundation

extension Status {
    /// `fetchctl status NAME`: the answer to "why didn't NAME fetch?" in one place: its latest
    /// attempts, when it is next eligible, and every reason it is not fetched now, each with its
    /// date or figure, as the daemon's wake applies them.
    static func printDetails(of handler: HandlerStatus, now: Date = Date()) {
        print("\(handler.name) (\(handler.kind)\(handler.enabled ? "" : ", disabled"))"
            + (handler.definedIn.map { ", defined in \($0)" } ?? ""))
        var last = handler.running ? "running now" : (handler.lastResult ?? "never fetched")
        if let at = handler.lastAttemptAt { last += ", \(TimeText.relative(at, now: now))" }
        if handler.consecutiveFailures > 0 { last += "; \(handler.consecutiveFailures) failure(s) in a row" }
        print("  last attempt: \(TerminalText.visible(last))")
        print("  snapshot: \(handler.snapshotPath ?? "none yet")")
        print("  next eligible: \(handler.nextEligibleAt.map { when($0, now: now) } ?? "only when asked (fetchctl fetch) or pushed")")
        if let budget = handler.budget {
            print("  budget: \(budget.used) of \(budget.perDay) fetches used in the last 24 h, \(max(0, budget.perDay - budget.used)) left")
        }
        let holds = handler.holds ?? []
        if holds.isEmpty {
            print("  not fetched now because: nothing holds it back; the next wake fetches it")
        } else {
            print("  not fetched now because:")
            var rows: [[String]] = []
            for hold in holds {
                rows.append(["   ", hold.cause.rawValue, hold.until.map { "until " + when($0, now: now) } ?? "", hold.detail])
            }
            TimeText.printTable(rows)
        }
        let recent = handler.recent ?? []
        print("  last \(recent.count) attempt\(recent.count == 1 ? "" : "s")\(recent.isEmpty ? ": none" : ":")")
        if !recent.isEmpty {
            var rows = [["   ", "STARTED", "TRIGGER", "RESULT", "DURATION"]]
            for entry in recent {
                rows.append(["   ", TimeText.local(entry.startedAt), entry.trigger,
                             entry.result + (entry.reason.map { " (\($0))" } ?? ""), "\(entry.durationMilliseconds) ms"])
            }
            TimeText.printTable(rows)
        }
    }

    /// `2026-11-28 08:50:00 (in 18m)`; "now" for a date not in the future.
    private static func when(_ date: Date, now: Date) -> String {
        date <= now ? "now" : "\(TimeText.local(date)) (\(TimeText.relative(date, now: now)))"
    }
}
