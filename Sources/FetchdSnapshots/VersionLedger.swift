/// The size of every version in the cache, so the cap is enforced without a scan.
struct VersionLedger {
    /// Bytes per version folder, by handler then version name.
    var versions: [String: [String: Int]] = [:]
    /// The sum of all of them.
    var total = 0

    /// Counts a version of `bytes` (replacing its earlier size, if any).
    mutating func add(_ handler: String, _ version: String, bytes: Int) {
        total += bytes - (versions[handler]?[version] ?? 0)
        versions[handler, default: [:]][version] = bytes
    }

    /// Forgets every version of `handler`.
    mutating func remove(_ handler: String) {
        total -= versions.removeValue(forKey: handler)?.values.reduce(0, +) ?? 0
    }

    /// Forgets a version.
    mutating func remove(_ handler: String, _ version: String) {
        total -= versions[handler]?.removeValue(forKey: version) ?? 0
    }
}
