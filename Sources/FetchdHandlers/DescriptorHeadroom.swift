#if canImport(Glibc)
import Glibc
#endif

/// Checks that the process can still open a few file descriptors before a program is started.
///
/// swift-subprocess 1.0.2 stops the whole process (`fatalError("FileDescriptor … was not closed")`)
/// when it runs out of descriptors half-way through setting up a child's pipes: the descriptors it
/// already made are dropped without being closed. At the file-descriptor limit (RLIMIT_NOFILE) a
/// fetch must fail with a clear reason instead, and the daemon keep running, so the room is tried
/// first. Another exec handler cannot take the room between this check and the spawn (both happen
/// inside `SpawnGate`); another thread (a socket, the snapshot commit) still can: the margin makes
/// that unlikely, not impossible.
enum DescriptorHeadroom {
    /// Descriptors a spawn needs (stdin, a pipe for output, the library's own) plus a margin for
    /// fetches starting at the same moment.
    static let needed = 16

    /// Nil when `needed` descriptors can be opened now; else why not, naming EMFILE and the limit.
    static func shortage() -> String? {
        var opened: [Int32] = []
        opened.reserveCapacity(needed)
        defer { opened.forEach { _ = close($0) } }
        for _ in 0..<needed {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let code = errno
                var limit = rlimit()
                let soft = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 ? " (RLIMIT_NOFILE \(limit.rlim_cur))" : ""
                let name = code == EMFILE ? "EMFILE" : code == ENFILE ? "ENFILE" : "errno \(code)"
                return "\(String(cString: strerror(code))) (\(name)): fetchd is at its file-descriptor limit\(soft)"
            }
            opened.append(fd)
        }
        return nil
    }
}
