import FetchdCore
import Foundation
import GRDB

/// One finished fetch, as kept in the history table.
public struct FetchRecord: Codable, Sendable, Equatable, FetchableRecord, TableRecord {
    /// The fetch's id, unique across handlers and rising, assigned when it is recorded.
    public var id: Int64?
    /// The handler's name.
    public var handler: String
    /// When the fetch started.
    public var startedAt: Date
    /// When it finished.
    public var finishedAt: Date
    /// Its duration in milliseconds.
    public var durationMilliseconds: Int
    /// The result's name (`newData`, `noData`, `failed`, `expired`).
    public var result: String
    /// Why it failed, for failures.
    public var reason: String?
    /// What started it.
    public var trigger: String
    /// Snapshot size in bytes, when one was produced.
    public var bytes: Int?
    /// Snapshot SHA-256, when one was produced.
    public var sha256: String?
    /// The snapshot version written, for `newData`.
    public var version: String?

    /// The database table.
    public static let databaseTableName = "fetch_history"

    /// Times as fetchd stores them, read without ICU (`StoredDate`).
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy {
        .custom(StoredDate.date(from:))
    }

    /// Creates a record.
    public init(handler: String, startedAt: Date, finishedAt: Date, result: FetchResult, trigger: FetchTrigger,
                bytes: Int? = nil, sha256: String? = nil, version: String? = nil) {
        self.handler = handler
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.durationMilliseconds = Int((finishedAt.timeIntervalSince(startedAt) * 1000).rounded())
        self.result = result.name
        self.reason = result.reason
        self.trigger = trigger.rawValue
        self.bytes = bytes
        self.sha256 = sha256
        self.version = version
    }

    /// The typed result.
    public var fetchResult: FetchResult? { FetchResult(name: result, reason: reason) }

    enum CodingKeys: String, CodingKey {
        case id, handler, result, reason, trigger, bytes, sha256, version
        case startedAt = "started_at"
        case finishedAt = "finished_at"
        case durationMilliseconds = "duration_ms"
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
