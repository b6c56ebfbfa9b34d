import FetchdCore
import FetchdHandlers
import FetchdSnapshots

#if canImport(Glibc)
import Glibc
#endif

/// A handler's newest published content, found by fetchd-runas itself rather than taken as a
/// path from fetchd: fetchd owns the cache, so a fetchd taken over could point any folder of it
/// (or `latest`) elsewhere and have a configured program read a file of its choosing with its
/// user's rights. Each step is opened relative to the previous one without following a link
/// (`O_NOFOLLOW`), but for `latest`, whose target must be `versions/VERSION` as fetchd writes
/// it; the content must be a regular file. The names are `SnapshotLayout`'s.
struct PublishedSnapshot {
    /// The content, open for reading; the caller closes it.
    let descriptor: Int32
    /// Its path as fetchd publishes it: `CACHE/HANDLER/versions/VERSION/content`.
    let path: String
    /// Its size in bytes.
    let bytes: Int

    /// The newest content of `handler` under `cache`, or nil when it has none yet.
    static func open(handler: String, cache: String) throws(RunasPlan.Refusal) -> PublishedSnapshot? {
        let root = Glibc.open(cache, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard root >= 0 else { return try absent(cache) }
        defer { close(root) }
        let folder = openat(root, handler, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else { return try absent("\(cache)/\(handler)") }
        defer { close(folder) }
        var target = [CChar](repeating: 0, count: 512)
        let layout = SnapshotLayout(root: cache)
        let length = readlinkat(folder, SnapshotLayout.latestName, &target, target.count - 1)
        guard length > 0 else { return try absent(layout.latestLink(of: handler)) }
        let link = String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let parts = link.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == SnapshotLayout.versionsName, !parts[1].isEmpty, parts[1] != ".", parts[1] != ".." else {
            throw RunasPlan.Refusal(description: "\(layout.latestLink(of: handler)) points at \"\(link)\", not at versions/VERSION")
        }
        let version = String(parts[1])
        let versions = openat(folder, SnapshotLayout.versionsName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard versions >= 0 else { return try absent(layout.versionsDirectory(of: handler)) }
        defer { close(versions) }
        let versionFolder = openat(versions, version, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard versionFolder >= 0 else { return try absent(layout.versionDirectory(of: handler, version: version)) }
        defer { close(versionFolder) }
        let path = layout.contentPath(of: handler, version: version)
        // O_NONBLOCK: a FIFO planted there must not hold the open; it fails the check below.
        let content = openat(versionFolder, SnapshotLayout.contentName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard content >= 0 else { return try absent(path) }
        var info = stat()
        guard fstat(content, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(content)
            throw RunasPlan.Refusal(description: "\(path) is not a regular file")
        }
        return PublishedSnapshot(descriptor: content, path: path, bytes: Int(info.st_size))
    }

    /// Nil for a step that does not exist yet (no snapshot); a refusal for anything else (a
    /// link where a folder or the file should be, a permission problem).
    private static func absent(_ path: String) throws(RunasPlan.Refusal) -> PublishedSnapshot? {
        let code = errno
        if code == ENOENT { return nil }
        let why = code == ELOOP || code == ENOTDIR ? "a symbolic link or not a folder" : String(cString: strerror(code))
        throw RunasPlan.Refusal(description: "cannot open \(path) without following links: \(why)")
    }

    /// Copies the content into a new file at `copy` (0644, readable by the program's user),
    /// at most `maxBytes`; false when it is larger or cannot be copied (the program then gets
    /// no `FETCHD_PREVIOUS`).
    func copy(to copy: String, maxBytes: Int) -> Bool {
        guard bytes <= maxBytes, case .copied = UserOutput.copy(descriptor, bytes: bytes, to: copy) else { return false }
        return true
    }
}
