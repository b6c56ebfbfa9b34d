#if canImport(Glibc)
import Glibc
#endif
import CPosixShim
import Foundation
import Synchronization

/// The highest anonymous memory of the process while a wake runs (`fetchd --once`), sampled
/// every `periodMicroseconds` from `/proc/self/statm` (resident less file-backed and shared
/// pages: the pages fetchd itself costs the machine, as `smaps_rollup`'s `Anonymous` counts
/// them). The kernel keeps a peak of the whole resident set only (`VmHWM`), most of it the
/// binary's and the libraries' clean pages.
///
/// Only for `--once`, which reports a wake's cost: a sampling thread would wake the daemon.
final class AnonymousMemoryPeak: Sendable {
    /// How often it samples.
    static let periodMicroseconds: UInt32 = 10_000

    private let state = Mutex((running: true, peakKiB: 0, cpuMicroseconds: 0))

    /// Starts sampling.
    init() {
        let thread = Thread { [self] in
            _ = fetchd_name_this_thread("fetchd-memory")
            let descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
            defer { if descriptor >= 0 { close(descriptor) } }
            while descriptor >= 0, state.withLock({ $0.running }) {
                let kib = Self.anonymousKiB(descriptor)
                let cpu = Self.threadCPUMicroseconds()
                state.withLock { state in
                    state.peakKiB = max(state.peakKiB, kib ?? 0)
                    state.cpuMicroseconds = cpu
                }
                usleep(Self.periodMicroseconds)
            }
        }
        thread.start()
    }

    /// Stops sampling: the highest anonymous memory seen, in KiB (0 without /proc), and the CPU
    /// time the sampling took, which is not the wake's. The sampling thread ends by itself
    /// within a period: the caller, an async task, never waits.
    func stop() -> (peakKiB: Int, cpuMicroseconds: Int) {
        state.withLock { state in
            state.running = false
            return (state.peakKiB, state.cpuMicroseconds)
        }
    }

    /// The calling thread's CPU time so far.
    private static func threadCPUMicroseconds() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Int(time.tv_sec) * 1_000_000 + Int(time.tv_nsec) / 1000
    }

    /// The size of a page, in KiB: `statm` counts pages.
    private static let pageKiB = Int(sysconf(Int32(_SC_PAGESIZE))) / 1024

    /// `statm`'s resident less its shared pages (file-backed and shmem), in KiB.
    private static func anonymousKiB(_ descriptor: Int32) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = pread(descriptor, &buffer, buffer.count - 1, 0)
        guard count > 0 else { return nil }
        let fields = String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ")
        guard fields.count >= 3, let resident = Int(fields[1]), let shared = Int(fields[2]) else { return nil }
        return (resident - shared) * pageKiB
    }
}
