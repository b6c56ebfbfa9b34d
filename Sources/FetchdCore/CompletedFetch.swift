import Foundation

/// One fetch's result, typed, from the moment it is settled to the moment someone reads it:
/// settling makes it (`FetchPipeline.settle`), publishing completes it (the snapshot's version,
/// or `notPublished`), recording gives it its `id`; the journal, a wake's tally, the history and
/// the control answers read it.
public struct CompletedFetch: Sendable, Equatable {
    /// Its id, unique across handlers and rising, once it is recorded (nil before).
    public var id: Int64?
    /// The handler.
    public var handler: String
    /// What started it.
    public var trigger: FetchTrigger
    /// When it started (after it got its slot).
    public var startedAt: Date
    /// When it finished.
    public var finishedAt: Date
    /// How it ended.
    public var result: FetchResult
    /// The new snapshot's size in bytes, for content in hand (new, or unchanged and so `noData`).
    public var bytes: Int?
    /// The new snapshot's SHA-256, with `bytes`.
    public var sha256: String?
    /// The version published, for `newData` once published.
    public var version: String?
    /// The HTTP validators of the content in hand, stored with the handler's state; nil keeps
    /// the stored ones (no content came: a failure, a 304).
    public var validators: HTTPValidators?
    /// The server's floor on the next fetch (Retry-After, Cache-Control max-age, Expires);
    /// recorded as the handler's, replacing the stored one (nil clears it).
    public var notBefore: Date?

    /// A fetch of `handler` that ended with `result`.
    public init(handler: String, trigger: FetchTrigger, startedAt: Date, finishedAt: Date, result: FetchResult,
                bytes: Int? = nil, sha256: String? = nil, version: String? = nil) {
        self.handler = handler
        self.trigger = trigger
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.result = result
        self.bytes = bytes
        self.sha256 = sha256
        self.version = version
    }

    /// How long it took, in milliseconds.
    public var durationMilliseconds: Int { Int((finishedAt.timeIntervalSince(startedAt) * 1000).rounded()) }

    /// This fetch when the snapshot it brought could not be published: `failed`, with why, and
    /// nothing of the content kept (its validators belong to content that was not kept).
    public func notPublished(_ problem: String) -> CompletedFetch {
        var failed = self
        failed.result = .failed(reason: "cannot write the snapshot: \(problem)")
        (failed.version, failed.bytes, failed.sha256, failed.validators) = (nil, nil, nil, nil)
        return failed
    }
}

/// The HTTP validators of a snapshot, sent back on the next fetch so that the server can answer
/// 304 Not Modified.
public struct HTTPValidators: Sendable, Equatable {
    /// The `ETag`, nil when the server sent none.
    public var etag: String?
    /// The `Last-Modified`, nil when the server sent none.
    public var lastModified: String?

    /// Validators as the server sent them (nil: not sent).
    public init(etag: String?, lastModified: String?) {
        self.etag = etag
        self.lastModified = lastModified
    }
}
