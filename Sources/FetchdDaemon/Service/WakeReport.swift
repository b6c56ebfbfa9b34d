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
        /// CPU time of each thread alive now (by thread id): its name and nanoseconds on a CPU.
        public var threads: [Int: (name: String, nanoseconds: Int)]

        /// The process's usage as a wake begins: the threads are read first, so reading them
        /// is not counted in the wake's CPU time.
        public static func atStart() -> Usage {
            let threads = threadTimes()
            var usage = process()
            usage.threads = threads
            return usage
        }

        /// The process's usage as a wake ends: the threads are read last, for the same reason.
        public static func atEnd() -> Usage {
            var usage = process()
            usage.threads = threadTimes()
            return usage
        }

        private static func process() -> Usage {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            let cpu = (Int(usage.ru_utime.tv_sec) + Int(usage.ru_stime.tv_sec)) * 1_000_000
                + Int(usage.ru_utime.tv_usec) + Int(usage.ru_stime.tv_usec)
            return Usage(instant: .now, cpuMicroseconds: cpu, peakResidentKiB: Int(usage.ru_maxrss), threads: [:])
        }

        /// Each thread's name and time on a CPU (`/proc/self/task/TID/schedstat`, nanoseconds:
        /// `stat`'s clock ticks are 10 ms, a tenth of a small wake).
        static func threadTimes() -> [Int: (name: String, nanoseconds: Int)] {
            guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return [:] }
            var threads: [Int: (name: String, nanoseconds: Int)] = [:]
            for task in tasks {
                guard let tid = Int(task),
                      let name = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8),
                      let schedstat = try? String(contentsOfFile: "/proc/self/task/\(tid)/schedstat", encoding: .utf8),
                      let nanoseconds = schedstat.split(separator: " ").first.flatMap({ Int($0) }) else { continue }
                threads[tid] = (name.trimmingCharacters(in: .whitespacesAndNewlines), nanoseconds)
            }
            return threads
        }
    }

    /// How the fetches the wake ran ended.
    public var tally: WakeTally
    /// Usage when the wake began and when its results were durable.
    public var before: Usage
    /// See `before`.
    public var after: Usage
    /// Results logged but not recorded: the state database refused them to the end.
    public var unrecorded = 0
    /// The highest anonymous memory seen during the wake, in KiB (`AnonymousMemoryPeak`).
    public var peakAnonymousKiB = 0

    /// One line for a person (and for the benchmark's parser): `wake: 1000 fetches (1000 new,
    /// 0 no data, 0 failed) in 812 ms, CPU 640 ms, peak RSS 48 MiB, peak anonymous 9.5 MiB`.
    public var summary: String {
        let wallMilliseconds = Int((after.instant - before.instant) / .milliseconds(1))
        let cpuMilliseconds = (after.cpuMicroseconds - before.cpuMicroseconds) / 1000
        let anonymousTenths = peakAnonymousKiB * 10 / 1024
        return "wake: \(tally.fetches) fetches (\(tally.newData) new, \(tally.noData) no data, "
            + "\(tally.failures) failed) in \(wallMilliseconds) ms, CPU \(cpuMilliseconds) ms, "
            + "peak RSS \(after.peakResidentKiB / 1024) MiB, peak anonymous \(anonymousTenths / 10).\(anonymousTenths % 10) MiB"
    }

    /// Where the wake's CPU time went, by thread name, busiest first (threads that ended during
    /// the wake are missing): `threads: swift-pool 70 ms, fetchd-http 48 ms`. The HTTP driver is
    /// one thread, so its share bounds how short a wake of many fetches can be.
    public var threadSummary: String {
        let spent = Dictionary(after.threads.map { tid, thread in
            (Self.readableThreadName(thread.name), thread.nanoseconds - (before.threads[tid]?.nanoseconds ?? 0))
        }, uniquingKeysWith: +)
        return "threads: " + spent.filter { $0.1 > 0 }.sorted { $0.1 > $1.1 }
            .map { "\($0.0) \($0.1 / 1_000_000) ms" }.joined(separator: ", ")
    }

    /// Swift concurrency runs on NIO's singleton event loops (`NIO-SGLTN-1-#0`...; see
    /// `FetchdMain`), or on libdispatch's default-QoS root queue where that executor is not
    /// installed (tests). libdispatch names its threads after their root queue, cut to the
    /// kernel's 15 characters from the front (`com.apple.root.default-qos` reads
    /// `oot.default-qos`); serial queues (the commit queue) run on overcommit ones.
    static func readableThreadName(_ name: String) -> String {
        if name.hasPrefix("NIO-SGLTN-") || name.hasSuffix("default-qos") { return "swift-pool" }
        if name.hasSuffix("qos.overcommit") { return "dispatch-queues" }
        return name
    }
}
