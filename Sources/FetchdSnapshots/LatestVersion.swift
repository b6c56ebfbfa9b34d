/// What the fetch path needs to know of a handler's latest version, kept in memory for every
/// handler (`SnapshotStore.known(of:version:)`): whether new content is the same, and which
/// URL the stored validators belong to. Not the whole metadata: its details (the response's
/// headers, a dozen strings) make it a kilobyte a handler, 10 MB for 10,000 handlers.
public struct LatestVersion: Sendable, Equatable {
    /// The version's folder name.
    public let version: String
    /// The content's size, in bytes.
    public let bytes: Int
    /// The content's SHA-256, lower-case hex.
    public let sha256: String
    /// The URL the version was fetched from (`details["request_url"]`), if an http fetch.
    public let requestURL: String?

    /// The summary of `metadata`.
    public init(_ metadata: SnapshotMetadata) {
        version = metadata.version
        bytes = metadata.bytes
        sha256 = metadata.sha256
        requestURL = metadata.details["request_url"]
    }
}
