#if canImport(Glibc)
import Glibc
#endif
import FetchdControl

extension PeerCredentials {
    /// `SO_PEERCRED`'s `struct ucred`, which Glibc hides behind _GNU_SOURCE; the same layout.
    struct Kernel: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    init(_ kernel: Kernel) { self.init(pid: kernel.pid, uid: kernel.uid, gid: kernel.gid) }

    /// The credentials of the peer of the connected Unix socket `fd`, nil when the kernel does not say.
    init?(socket fd: Int32) {
        var found = Kernel()
        var length = socklen_t(MemoryLayout<Kernel>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &found, &length) == 0 else { return nil }
        self.init(found)
    }
}
