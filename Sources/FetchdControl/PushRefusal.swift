import FetchdCore

/// Why a push was refused.
public enum PushRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// No such handler is loaded.
    case unknownHandler(String)
    /// The data is not JSON, or too large.
    case badData(PushData.Problem)
    /// The state database failed; the push was not taken.
    case stateUnavailable(String)
    /// fetchd is stopping: the push was not taken (send it again once fetchd runs).
    case shuttingDown

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .unknownHandler(let name): ControlError.notLoaded(name)
        case .badData(let problem): problem.description
        case .stateUnavailable(let detail): "the push was not taken: the state database failed (\(detail)); see the log"
        case .shuttingDown: "the push was not taken: fetchd is shutting down; send it again once it runs"
        }
    }
}
