import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One process's exclusive hold on a cache directory, for as long as its `SnapshotStore` lives.
///
/// Opening a store clears `<cache>/.staging`, where fetches in progress write their versions: a
/// second fetchd on the same cache (`fetchd --once` while the service runs, or two daemons)
/// would delete the first one's fetches under it, and both would number versions from the same
/// ledger. An `flock(2)` on `<cache>/.lock` says "taken"; the kernel drops it when the process
/// ends, however it ends (a SIGKILL or a crash leaves no stale lock to clean up). The holder's
/// pid is written in the file, so the refusal can say who holds it.
///
/// The file is the cache owner's, mode 0600: a user who could open it could take the lock and
/// keep fetchd from ever starting again (flock needs no write access). It is never followed
/// through a symlink: a handler running as the cache's owner could otherwise plant one and have
/// a `fetchd --once` run as root truncate any file.
public final class CacheLock: Sendable {
    /// The lock file's name inside the cache directory.
    public static let fileName = ".lock"

    /// Another process holds the cache.
    public struct Busy: Error, CustomStringConvertible {
        /// The cache directory.
        public let directory: String
        /// The holder's pid, as it wrote it in the lock file (nil if it could not be read).
        public let holder: Int32?
        /// What an administrator reads, and what to do about it.
        public var description: String {
            "another fetchd\(holder.map { " (pid \($0))" } ?? "") is using the cache \(directory): stop it first, "
                + "or use it through fetchctl (fetchctl wake runs its due handlers), or give this one another --cache-dir"
        }
    }

    private let descriptor: Int32

    /// Takes the lock on `directory` (which must exist), or throws `Busy` at once if another
    /// process holds it (a daemon that waited here would look hung to whoever started it), or
    /// `DurableFile.Failure` if the lock file cannot be opened.
    public init(directory: String) throws {
        let path = "\(directory)/\(Self.fileName)"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw DurableFile.Failure(operation: "open the lock file", path: path, code: errno) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw DurableFile.Failure(operation: "open the lock file (not a regular file)", path: path, code: EINVAL)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            let holder = Self.holder(fd)
            close(fd)
            guard code == EWOULDBLOCK else { throw DurableFile.Failure(operation: "lock", path: path, code: code) }
            throw Busy(directory: directory, holder: holder)
        }
        Self.giveToOwner(fd, info: info, directory: directory)
        // The pid only informs (the refusal above, `cat .lock`): a full disk must not stop fetchd.
        let pid = Array("\(getpid())\n".utf8)
        if pwrite(fd, pid, pid.count, 0) == pid.count { _ = ftruncate(fd, off_t(pid.count)) }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Makes the lock file the cache directory owner's, mode 0600. A root-run `fetchd --once`
    /// creates it as root, and the service (its own user) could then never open it again.
    private static func giveToOwner(_ fd: Int32, info: stat, directory: String) {
        var folder = stat()
        if geteuid() == 0, stat(directory, &folder) == 0, info.st_uid != folder.st_uid || info.st_gid != folder.st_gid {
            _ = fchown(fd, folder.st_uid, folder.st_gid)
        }
        if info.st_mode & 0o7777 != 0o600 { _ = fchmod(fd, 0o600) }  // however it came to be otherwise
    }

    /// The pid written in a held lock file, if it reads as one.
    private static func holder(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int32(text).flatMap { $0 > 0 ? $0 : nil }
    }
}
