import FetchdPlanner
import Foundation
import Synchronization

/// Folds the uses one source reports into sessions before they are stored: a use of a handler
/// within the usage model's session window of the last one recorded for it is part of that
/// session and is not recorded again (a reader opening a file ten times, an unlock right after a
/// resume). The model folds the same way when it learns, so nothing it would count is lost.
final class UseFolder: Sendable {
    /// The usage model's session window, in seconds: uses closer together are one session.
    static let sessionSeconds = UsageModel.Settings().sessionSeconds

    private let lastRecorded = Mutex<[String: Date]>([:])

    /// Creates an empty folder.
    init() {}

    /// Whether a use of `handler` at `date` starts a new session; if it does, it becomes the
    /// handler's last recorded use. A use dated before the last one (the wall clock was stepped
    /// back) starts a new session: otherwise every use would be folded away until the clock
    /// caught up again, hours later.
    func startsSession(_ handler: String, at date: Date) -> Bool {
        lastRecorded.withLock { last in
            if let previous = last[handler], date >= previous,
               date.timeIntervalSince(previous) < Self.sessionSeconds { return false }
            last[handler] = date
            return true
        }
    }
}
