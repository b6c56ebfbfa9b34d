import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// fetchd's file-descriptor limit (RLIMIT_NOFILE): raised at start, given back to programs.
///
/// Why raise it: systemd starts services with a soft limit of 1024 under a much higher hard one,
/// so that a program able to use many descriptors raises the soft limit itself (one using
/// `select(2)` could not). fetchd uses poll and epoll only, and at its limit more than its own
/// fetches fail: libdispatch's worker monitor, which every Swift task here depends on, aborts the
/// process when it cannot open `/proc` (docs/reliability.md). With the hard limit in force,
/// fetchd reaches a limit only when one is set low on purpose (`LimitNOFILE=`, `prlimit`).
/// Programs started by exec handlers get the soft limit fetchd started with, as systemd
/// recommends.
public enum DescriptorLimit {
    /// The soft limit fetchd started with, once raised; 0 before.
    private static let original = Atomic<UInt64>(0)

    /// The soft limit a program should get (0: leave it as it is).
    static var forPrograms: UInt64 { original.load(ordering: .relaxed) }

    /// Raises the soft limit to the hard one; returns both when it changed.
    public static func raiseSoftToHard() -> (before: UInt64, after: UInt64)? {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return nil }
        let before = limit.rlim_cur
        limit.rlim_cur = limit.rlim_max
        guard setrlimit(resource, &limit) == 0 else { return nil }
        original.store(UInt64(before), ordering: .relaxed)
        return (UInt64(before), UInt64(limit.rlim_max))
    }
}
