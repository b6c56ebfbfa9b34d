import FetchdCore
import Foundation

extension SnapshotStore {
    /// Deletes all but the newest `retain` versions of `handler`; `latest` is never deleted.
    public func prune(handler: String, retain: Int) {
        let names = ledger.withLock { ($0.versions[handler].map { Array($0.keys) } ?? []).sorted() }
        guard names.count > max(retain, 1) else { return }  // the usual case: no readlink per commit
        let current = currentVersion(of: handler)
        for name in names.dropLast(max(retain, 1)) where name != current {
            removeVersion(handler, name)
        }
    }

    /// Evicts the oldest non-latest versions across all handlers until the cache fits
    /// `maxTotalBytes`. Costs nothing while the cache is under its cap.
    public func enforceCacheLimit() {
        let (total, all) = ledger.withLock { ($0.total, $0.versions) }
        guard total > maxTotalBytes else { return }
        var candidates: [(date: Substring, handler: String, version: String, size: Int)] = []
        for (handler, versions) in all {
            let current = currentVersion(of: handler)
            for (version, size) in versions where version != current {
                // Order by the timestamp part so handlers' versions interleave by age.
                candidates.append((version.drop(while: { $0 != "-" }), handler, version, size))
            }
        }
        var excess = total - maxTotalBytes
        for candidate in candidates.sorted(by: { $0.date < $1.date }) where excess > 0 {
            removeVersion(candidate.handler, candidate.version)
            excess -= candidate.size
        }
    }

    /// Deletes every snapshot of `handler` and forgets them (a handler unregistered for good):
    /// the cache's total no longer counts them, and nothing remembered of its latest stays.
    /// Not while a fetch of it may publish.
    public func removeHandler(_ handler: String) {
        removeTree(directory(of: handler))
        ledger.withLock { $0.remove(handler) }
        latestKnown.withLock { _ = $0.removeValue(forKey: handler) }
    }

    /// Adds a newly published version to the ledger.
    func recordInLedger(_ handler: String, version: String, bytes: Int) {
        ledger.withLock { $0.add(handler, version, bytes: bytes) }
    }

    /// Reads every version's size from disk (at start).
    func scanLedger() -> VersionLedger {
        var ledger = VersionLedger()
        for handler in handlerNames() {
            for version in versionNames(of: handler) {
                ledger.add(handler, version, bytes: Self.treeSize(layout.versionDirectory(of: handler, version: version)))
            }
        }
        return ledger
    }

    private func removeVersion(_ handler: String, _ version: String) {
        removeTree(layout.versionDirectory(of: handler, version: version))
        ledger.withLock { $0.remove(handler, version) }
    }

    private static func treeSize(_ path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.reduce(0) { total, name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: "\(path)/\(name)")
            return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
        }
    }
}
