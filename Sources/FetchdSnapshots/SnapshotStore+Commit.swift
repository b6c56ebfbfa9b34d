#if canImport(Glibc)
import Glibc
#endif
import FetchdCore
import Foundation

extension SnapshotStore {
    /// Checks and hashes a staged file, names its version and assembles its folder out of sight
    /// (step 1 of `commit(_:)`). Runs outside any batch (and off the coordinator), so hashing a
    /// large snapshot delays no one else, and fetches assemble their versions side by side
    /// instead of one after another on the commit queue. Nothing is visible to readers until the
    /// batch publishes it; a crash before that leaves a staging folder that the next start removes.
    ///
    /// `template` supplies everything but `version`, `bytes` and `sha256`, which are computed here,
    /// unless `knownDigest` gives them (a transfer hashed its file while downloading it; its size
    /// is checked again here, so a file changed since cannot be published under that digest).
    /// `staged` is the file's `lstat` when the caller has just taken one (saves a system call).
    /// `currentVersion` is the version `latest` named when the fetch began, when the caller read
    /// it then (`.read(nil)`: there was none); `.unread` reads `latest` again. Only this fetch can have
    /// moved it since: one snapshot of a handler is prepared and committed at a time.
    public func prepare(stagedFile: String, handler: String, template: SnapshotMetadata, retain: Int,
                        knownDigest: (sha256: String, bytes: Int)? = nil, staged: stat? = nil,
                        currentVersion: Lookup<String> = .unread) throws -> PreparedVersion {
        // Only a regular file with no other name is published: a handler that put a symlink or
        // a hard link at FETCHD_OUTPUT could otherwise make fetchd publish (and chmod) any file
        // fetchd can read, which matters most when the program runs as a user with less rights.
        // `staged` is the caller's lstat of the file once the handler was done with it.
        var info = staged ?? stat()
        guard staged != nil || lstat(stagedFile, &info) == 0,
              (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1 else {
            staging.discard(stagedFile: stagedFile)
            throw DurableFile.Failure(operation: "publish (not a regular file with a single link)", path: stagedFile, code: EINVAL)
        }
        let (digest, bytes) = try knownDigest.flatMap { $0.bytes == Int(info.st_size) ? $0 : nil }
            ?? FileDigest.sha256(ofFile: stagedFile)
        let previous = currentVersion.value(orRead: { self.currentVersion(of: handler) }).flatMap { known(of: handler, version: $0) }
        if let previous, previous.sha256 == digest, previous.bytes == bytes {
            staging.discard(stagedFile: stagedFile)
            return .unchanged(previous)
        }
        var metadata = template
        let newest = ledger.withLock { $0.versions[handler]?.keys.compactMap(VersionName.sequence(of:)).max() }
        metadata.version = VersionName.make(sequence: (newest ?? 0) + 1, at: template.fetchedAt)
        metadata.bytes = bytes
        metadata.sha256 = digest
        metadata.handler = handler
        let json = try metadata.encoded()
        let folder: String
        do throws(DurableFile.Failure) {
            folder = try assemble(stagedFile, metadataJSON: json, handler: handler,
                                  needsChmod: info.st_mode & 0o7777 != 0o644)
        } catch {
            staging.discard(stagedFile: stagedFile)
            throw error
        }
        return .pending(PendingVersion(folder: folder, handler: handler, metadata: metadata,
                                       metadataBytes: json.count, retain: retain))
    }

    /// Publishes a batch of versions, each atomically, with two `syncfs` calls for the whole batch:
    ///
    /// 1. each version's folder was assembled under `.staging` by `prepare` (content written
    ///    there by an http fetch or moved in, meta.json beside it);
    /// 2. `syncfs`: every assembled file is on stable storage;
    /// 3. each folder is renamed into its handler's `versions/`, and `latest` swapped by a rename;
    /// 4. `syncfs`: the renames are durable, so the results may be recorded.
    ///
    /// A crash anywhere leaves each handler at its old version or its new one: never a torn file
    /// (a rename only ever publishes synced data). Results come back in the batch's order.
    public func commit(_ batch: [PendingVersion]) -> PublishedBatch {
        var results = batch.map { Result<SnapshotMetadata, DurableFile.Failure>.success($0.metadata) }
        guard !batch.isEmpty else { return PublishedBatch(results: results) }
        if let failure = syncFileSystem() {
            batch.forEach { removeTree($0.folder) }
            return PublishedBatch(results: results.map { _ in .failure(failure) })
        }
        for (index, pending) in batch.enumerated() {
            do throws(DurableFile.Failure) {
                try publish(pending)
            } catch {
                removeTree(pending.folder)
                results[index] = .failure(error)
            }
        }
        // The new versions are visible now, whatever this flush says: report them as written
        // (they are what readers get) and pass the flush's failure on as a warning.
        let unflushed = syncFileSystem()
        for (index, pending) in batch.enumerated() where (try? results[index].get()) != nil {
            prune(handler: pending.handler, retain: pending.retain)
        }
        enforceCacheLimit()
        return PublishedBatch(results: results, unflushed: unflushed)
    }

    /// Commits one staged file on its own (tools and tests; the daemon batches).
    public func commit(stagedFile: String, handler: String, template: SnapshotMetadata, retain: Int)
        throws -> CommitOutcome
    {
        switch try prepare(stagedFile: stagedFile, handler: handler, template: template, retain: retain) {
        case .unchanged(let metadata): return .unchanged(metadata)
        case .pending(let pending):
            let outcome = commit([pending])
            if let unflushed = outcome.unflushed { throw unflushed }
            return .written(try outcome.results[0].get())
        }
    }

    /// Step 1: the complete version folder under `.staging` (nothing synced yet); returns it.
    private func assemble(_ stagedFile: String, metadataJSON: Data, handler: String,
                          needsChmod: Bool) throws(DurableFile.Failure) -> String {
        let content: String
        if staging.folder(of: stagedFile) != nil {
            content = stagedFile  // written in its future version folder: nothing to move
        } else {
            // A program's output or a transfer's download gets a staging folder of its own.
            content = try staging.versionPath(for: handler)
            do throws(DurableFile.Failure) {
                try DurableFile.rename(stagedFile, to: content)
            } catch {
                staging.discard(stagedFile: content)
                throw error
            }
        }
        let folder = PathName.directory(of: content)
        if needsChmod { chmod(content, 0o644) }
        // Written in place: the folder is out of sight until step 3, and the next start removes
        // it if a crash leaves it half done; the batch's first syncfs makes the file durable.
        do throws(DurableFile.Failure) {
            try DurableFile.writeNew(metadataJSON, to: "\(folder)/\(SnapshotLayout.metadataName)")
        } catch {
            removeTree(folder)
            throw error
        }
        return folder
    }

    /// Step 3: the version appears under its real name and becomes `latest`.
    private func publish(_ pending: PendingVersion) throws(DurableFile.Failure) {
        let version = pending.metadata.version
        let versions = layout.versionsDirectory(of: pending.handler)
        let published = "\(versions)/\(version)"
        let first = ledger.withLock { $0.versions[pending.handler]?.isEmpty ?? true }
        if first {
            // A handler's first version: its folder and `versions` are made here, once, rather
            // than checked on every fetch.
            try DurableFile.makeDirectory(directory(of: pending.handler))
            try DurableFile.makeDirectory(versions)
        }
        if rename(pending.folder, published) != 0 {
            // `versions` removed behind fetchd's back: made again.
            guard errno == ENOENT else { throw DurableFile.Failure(operation: "rename", path: published, code: errno) }
            try DurableFile.makeDirectory(versions)
            try DurableFile.rename(pending.folder, to: published)
        }
        do {
            let latest = layout.latestLink(of: pending.handler)
            let target = SnapshotLayout.latestTarget(version: version)
            // A handler's first version: there is no `latest` yet, so the link is made in place
            // (symlink(2) creates it whole or not at all) rather than made aside and renamed
            // over; if there is one after all (EEXIST), it is replaced as always.
            if !first || symlink(target, latest) != 0 {
                try DurableFile.replaceSymlink(at: latest, target: target, durably: false)
            }
        } catch {
            removeTree(published)  // not latest and not in the ledger: nothing would ever remove it
            throw error
        }
        recordInLedger(pending.handler, version: version, bytes: pending.metadata.bytes + pending.metadataBytes)
        latestKnown.withLock { $0[pending.handler] = LatestVersion(pending.metadata) }
    }

    /// `syncfs` on the cache's file system: one flush for everything written since the last.
    private func syncFileSystem() -> DurableFile.Failure? {
        do throws(DurableFile.Failure) {
            try DurableFile.syncFileSystem(containing: root)
            return nil
        } catch {
            return error
        }
    }
}
