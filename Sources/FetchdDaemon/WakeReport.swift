import FetchdCore
import FetchdState
#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// What one wake did and what it cost: printed by `fetchd --once`, read by `make bench-http`.
public struct WakeReport: Sendable {
    /// Time and resources used by the process at one moment.
    public struct Usage: Sendable {
        /// Monotonic time.
        public var instant: ContinuousClock.Instant
        /// User plus system CPU time of the process, in microseconds.
        public var cpuMicroseconds: Int
        /// The process's peak resident memory so far, in KiB.
        public var peakResidentKiB: Int

        /// The process's usage now.
        public static func now() -> Usage {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            let cpu = (Int(usage.ru_utime.tv_sec) + Int(usage.ru_stime.tv_sec)) * 1_000_000
                + Int(usage.ru_utime.tv_usec) + Int(usage.ru_stime.tv_usec)
            return Usage(instant: .now, cpuMicroseconds: cpu, peakResidentKiB: Int(usage.ru_maxrss))
        }
    }

    /// The results of the fetches the wake ran.
    public var records: [FetchRecord]
    /// Usage when the wake began and when its results were durable.
    public var before: Usage
    /// See `before`.
    public var after: Usage

    /// Fetches that failed or expired.
    public var failures: Int { records.filter { $0.fetchResult?.isFailure ?? true }.count }

    /// One line for a person (and for the benchmark's parser):
    /// `wake: 1000 fetches (1000 new, 0 no data, 0 failed) in 812 ms, CPU 640 ms, peak RSS 48 MiB`.
    public var summary: String {
        let new = records.filter { $0.fetchResult == .newData }.count
        let wallMilliseconds = Int((after.instant - before.instant) / .milliseconds(1))
        let cpuMilliseconds = (after.cpuMicroseconds - before.cpuMicroseconds) / 1000
        return "wake: \(records.count) fetches (\(new) new, \(records.count - new - failures) no data, "
            + "\(failures) failed) in \(wallMilliseconds) ms, CPU \(cpuMilliseconds) ms, "
            + "peak RSS \(after.peakResidentKiB / 1024) MiB"
    }
}
