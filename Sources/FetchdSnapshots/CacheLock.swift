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
public final class CacheLock: Sendable {
    /// The lock file's name inside the cache directory.
    public static let fileName = ".lock"

    private let descriptor: Int32

    /// Takes the lock on `directory` (which must exist), or throws at once if another process
    /// holds it: a daemon that waited here would look hung to whoever started it.
    public init(directory: String) throws(DurableFile.Failure) {
        let path = "\(directory)/\(Self.fileName)"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw DurableFile.Failure(operation: "open the lock file", path: path, code: errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            let holder = Self.holder(fd)
            close(fd)
            guard code == EWOULDBLOCK else { throw DurableFile.Failure(operation: "lock", path: path, code: code) }
            throw DurableFile.Failure(
                operation: "lock the cache (another fetchd\(holder.map { ", pid \($0)," } ?? "") is using it: stop it, "
                    + "e.g. systemctl stop fetchd, or give this one another --cache-dir)",
                path: path, code: code)
        }
        // The holder's pid, for the refusal above and for an administrator (`cat .lock`).
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) != 0 || pwrite(fd, pid, pid.count, 0) != pid.count {
            let code = errno
            close(fd)
            throw DurableFile.Failure(operation: "write the lock file", path: path, code: code)
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// The pid written in a held lock file, if it reads as one.
    private static func holder(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int32(text).flatMap { $0 > 0 ? $0 : nil }
    }
}
