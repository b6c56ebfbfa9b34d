import FetchdConfig
import FetchdControl
import FetchdCore
import Foundation

extension HoldReport {
    /// `hold` of `handler` as `fetchctl status NAME` shows it: the same reason the wake applies,
    /// with its figures in words and its date.
    init(_ hold: Eligibility.Hold, of handler: HandlerConfig) {
        switch hold {
        case .disabled:
            self.init(.disabled, detail: "enabled = false: fetched only when asked (fetchctl fetch) or pushed")
        case .onRequestOnly:
            self.init(.onRequest, detail: "min_interval = \"never\": fetched only when asked (fetchctl fetch) or pushed")
        case .fetching:
            self.init(.fetching, detail: "a fetch of it is running, or starting in this wake")
        case .minInterval(let until):
            self.init(.minInterval, until: until,
                      detail: "min_interval \(HumanDuration.format(seconds: handler.minIntervalSeconds)) since the last attempt")
        case .serverFloor(let until):
            self.init(.serverFloor, until: until,
                      detail: "the server asked for no fetch before then (Retry-After, Cache-Control max-age or Expires; "
                          + "honor_server_hints = false ignores it)")
        case .plan(let until, let reason):
            self.init(.planned, until: until, detail: "usage plan: \(reason)")
        case .backoff(let until, let failures):
            self.init(.backoff, until: until, detail: "failed \(failures) time\(failures == 1 ? "" : "s") in a row: "
                          + "the planner retries after a back-off that doubles with each failure, at most 1 h")
        case .budget(let until, let used, let perDay):
            self.init(.budget, until: until, detail: "budget: \(used) of \(perDay) fetches used in the last 24 h")
        case .globalBudget(let until, let used, let budget):
            self.init(.globalBudget, until: until,
                      detail: "global_budget: \(used) of \(budget) usage-planned fetches of all handlers used in the last 24 h")
        case .conditions(let reason):
            self.init(.conditions, detail: "\(reason) (fetchctl fetch still runs it)")
        case .powerSaver, .batteryCritical:
            self.init(hold == .powerSaver ? .powerSaver : .batteryCritical,
                      detail: "\(hold.waitReason ?? "") (fetchctl fetch still runs it)")
        case .pushLimit(let until):
            self.init(.pushLimit, until: until, detail: "a push is held by push_limit \(handler.pushLimit): its fetch runs then")
        case .sharedWake(let until):
            let sharing = WakeSharing.standard
            self.init(.sharedWake, until: until,
                      detail: "due: it waits for a wake that runs other fetches, so fetches share wakes (at most "
                          + "\(Int((sharing.delayFraction * 100).rounded())) % of min_interval, or "
                          + "\(HumanDuration.format(seconds: sharing.lateSeconds)) after a usage plan)")
        case .transferRetry(let until):
            self.init(.transferRetry, until: until,
                      detail: "its partial download resumes then (back-off after failures, or the server's Retry-After)")
        }
    }
}
