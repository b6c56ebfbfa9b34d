/// How one fetch ended: the completion-result contract.
///
/// A handler reports exactly one of `newData`, `noData` or `failed`; the daemon
/// records `expired` itself when the handler is still running at its deadline.
public enum FetchResult: Sendable, Equatable, Hashable, Codable {
    /// The handler fetched content that differs from the latest snapshot.
    case newData
    /// The handler ran but there was nothing new (or the content was byte-identical).
    case noData
    /// The handler failed; the reason is for people (logs, `fetchctl status`).
    case failed(reason: String)
    /// The handler did not complete before its deadline and was stopped.
    case expired

    /// The stable name used in the state database, JSON output and logs.
    public var name: String {
        switch self {
        case .newData: "newData"
        case .noData: "noData"
        case .failed: "failed"
        case .expired: "expired"
        }
    }

    /// The failure reason, if this result is a failure of any kind.
    public var reason: String? {
        switch self {
        case .failed(let reason): reason
        case .expired: "deadline expired"
        case .newData, .noData: nil
        }
    }

    /// True for `failed` and `expired`.
    public var isFailure: Bool {
        switch self {
        case .failed, .expired: true
        case .newData, .noData: false
        }
    }

    /// Rebuilds a result from its stored name and reason.
    public init?(name: String, reason: String?) {
        switch name {
        case "newData": self = .newData
        case "noData": self = .noData
        case "failed": self = .failed(reason: reason ?? "unknown failure")
        case "expired": self = .expired
        default: return nil
        }
    }

    /// A one-line description such as `failed: HTTP 500`.
    public var summary: String {
        if case .failed(let reason) = self { return "failed: \(reason)" }
        return name
    }
}

/// What started a fetch; recorded with every result and shown in history.
public enum FetchTrigger: String, Sendable, Codable, CaseIterable {
    /// A scheduled wake (the heartbeat or a systemd timer).
    case timer
    /// A person or script asked for it (`fetchctl fetch`).
    case manual
    /// A push wake (`fetchctl push`).
    case push
    /// A scheduled wake of a handler whose fetches are planned from its usage (`usage = [...]`),
    /// whatever the plan rested on this time (predicted uses, `max_staleness`, a first fetch).
    case usage
}
