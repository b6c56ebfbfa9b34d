import FetchdCore
import Foundation

/// A staged file checked, hashed and assembled as a version folder under `.staging`
/// (content and meta.json, not yet synced), ready to be published in the next batch
/// (`SnapshotStore.commit(_:)`).
public struct PendingVersion: Sendable {
    /// The version folder as assembled, under `.staging` (the staged file is its `content`).
    public let folder: String
    /// The handler it belongs to.
    public let handler: String
    /// Its complete metadata (version, size and digest filled in).
    public let metadata: SnapshotMetadata
    /// The size of meta.json, in bytes.
    let metadataBytes: Int
    /// How many versions of the handler to keep.
    public let retain: Int
}

/// What `SnapshotStore.prepare` found.
public enum PreparedVersion: Sendable {
    /// The content is byte-identical to `latest`; the staged file is already removed.
    case unchanged(LatestVersion)
    /// New content, to be committed.
    case pending(PendingVersion)
}

/// What `SnapshotStore.commit(_:)` did with a batch.
public struct PublishedBatch: Sendable {
    /// Per version, in the batch's order: its metadata, or why it was not published.
    public var results: [Result<SnapshotMetadata, DurableFile.Failure>]
    /// Set when the final flush failed: the versions are published but may not survive a
    /// power loss.
    public var unflushed: DurableFile.Failure?
}
