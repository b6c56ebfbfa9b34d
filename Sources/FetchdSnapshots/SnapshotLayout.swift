import FetchdCore

/// Where a cache's published snapshots are, by name: the one place the layout drawn in
/// `SnapshotStore` is spelled. Readers outside this module (the daemon's journal lines and
/// `on_complete`, the `reads` usage watcher) take their paths from here.
public struct SnapshotLayout: Sendable, Equatable {
    /// The cache directory.
    public let root: String

    /// The link in a handler's folder to its newest version's folder.
    public static let latestName = "latest"
    /// The folder in a handler's folder holding its published versions.
    public static let versionsName = "versions"
    /// A version's content file, the snapshot itself.
    public static let contentName = "content"
    /// A version's metadata file.
    public static let metadataName = "meta.json"

    /// The layout of the cache at `root`.
    public init(root: String) { self.root = root }

    /// The folder, 0700, holding the snapshots of handlers applications registered over D-Bus,
    /// by uid: readable by the daemon alone (and root), never through the world-readable cache.
    /// Applications read their content through the descriptor `OpenSnapshot` passes.
    public static let registeredName = ".registered"

    /// The folder of registered handlers' snapshots.
    public var registeredDirectory: String { "\(root)/\(Self.registeredName)" }

    /// The folder of `handler`'s snapshots: `<cache>/NAME`, or for a handler an application
    /// registered (`NAME@UID`), `<cache>/.registered/UID/NAME`.
    public func directory(of handler: String) -> String {
        guard let registered = RegisteredName(qualified: handler) else { return "\(root)/\(handler)" }
        return "\(registeredDirectory)/\(registered.uid)/\(registered.base)"
    }

    /// The link to `handler`'s newest version (`latest`).
    public func latestLink(of handler: String) -> String { "\(directory(of: handler))/\(Self.latestName)" }

    /// The stable path of `handler`'s newest snapshot's content (`latest/content`).
    public func latestContentPath(of handler: String) -> String { "\(latestLink(of: handler))/\(Self.contentName)" }

    /// The folder of `handler`'s published versions.
    public func versionsDirectory(of handler: String) -> String { "\(directory(of: handler))/\(Self.versionsName)" }

    /// The folder of one published version of `handler`.
    public func versionDirectory(of handler: String, version: String) -> String {
        "\(versionsDirectory(of: handler))/\(version)"
    }

    /// The content of one published version of `handler`: a path that stays valid while the
    /// version is kept, unlike `latestContentPath`, which moves on with the next version.
    public func contentPath(of handler: String, version: String) -> String {
        "\(versionDirectory(of: handler, version: version))/\(Self.contentName)"
    }

    /// The `latest` link's target for `version`, relative to the handler's folder.
    static func latestTarget(version: String) -> String { "\(versionsName)/\(version)" }
}
