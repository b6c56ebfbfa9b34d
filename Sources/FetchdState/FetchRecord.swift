import FetchdCore
import Foundation
import GRDB

/// One row of the history table. Internal: the rest of fetchd reads and writes results as
/// `CompletedFetch` (its typed result and trigger); this is only how a row is read.
struct FetchRecord: Codable, Sendable, Equatable, FetchableRecord, TableRecord {
    var id: Int64?
    var handler: String
    var startedAt: Date
    var finishedAt: Date
    var durationMilliseconds: Int
    /// The result's name (`newData`, `noData`, `failed`, `expired`).
    var result: String
    /// Why it failed, for failures.
    var reason: String?
    /// What started it (`FetchTrigger`'s raw value).
    var trigger: String
    var bytes: Int?
    var sha256: String?
    var version: String?

    /// The database table.
    static let databaseTableName = "fetch_history"

    /// Times as fetchd stores them, read without ICU (`StoredDate`).
    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy {
        .custom(StoredDate.date(from:))
    }

    enum CodingKeys: String, CodingKey {
        case id, handler, result, reason, trigger, bytes, sha256, version
        case startedAt = "started_at"
        case finishedAt = "finished_at"
        case durationMilliseconds = "duration_ms"
    }

    /// The row as a typed result. A result or trigger name this version does not know (a
    /// database written by a newer fetchd) reads as a failure saying so, and as `timer`.
    var completed: CompletedFetch {
        var fetch = CompletedFetch(
            handler: handler, trigger: FetchTrigger(rawValue: trigger) ?? .timer, startedAt: startedAt,
            finishedAt: finishedAt, result: FetchResult(name: result, reason: reason) ?? .failed(reason: "unknown result \(result)"),
            bytes: bytes, sha256: sha256, version: version)
        fetch.id = id
        return fetch
    }
}

/// What fetchd remembers about one handler between fetches and across restarts.
public struct HandlerState: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    /// The handler's name.
    public var name: String
    /// When the last fetch started.
    public var lastAttemptAt: Date?
    /// When the last fetch that did not fail finished.
    public var lastSuccessAt: Date?
    /// The last result's name.
    public var lastResult: String?
    /// The last failure's reason.
    public var lastReason: String?
    /// Failures (`failed` or `expired`) in a row.
    public var consecutiveFailures: Int
    /// The HTTP `ETag` of the latest snapshot.
    public var etag: String?
    /// The HTTP `Last-Modified` of the latest snapshot.
    public var lastModified: String?
    /// `newData` results since someone last looked (`fetchctl status`).
    public var newDataUnseen: Int
    /// The server asked not to be fetched before this time (Retry-After, Cache-Control max-age,
    /// Expires); the schedule honours it as a floor.
    public var notBefore: Date?

    /// The database table.
    public static let databaseTableName = "handler_state"

    /// Times as fetchd stores them, read without ICU (`StoredDate`).
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy {
        .custom(StoredDate.date(from:))
    }

    /// A handler that has never been fetched.
    public init(name: String) {
        self.name = name
        self.consecutiveFailures = 0
        self.newDataUnseen = 0
    }

    enum CodingKeys: String, CodingKey {
        case name, etag
        case lastAttemptAt = "last_attempt_at"
        case lastSuccessAt = "last_success_at"
        case lastResult = "last_result"
        case lastReason = "last_reason"
        case consecutiveFailures = "consecutive_failures"
        case lastModified = "last_modified"
        case newDataUnseen = "new_data_unseen"
        case notBefore = "not_before"
    }
}
