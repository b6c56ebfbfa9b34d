import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads files under /proc whole.
///
/// Why not `String(contentsOfFile:)`: a /proc file reports a size of 0, and Foundation then
/// returns only the first page the kernel hands it (/proc/net/tcp: 4,050 of 25,950 bytes on a
/// busy test run), so a line past it was silently missing.
public enum ProcFile {
    /// The file's text, read with read(2) until its end; nil when it cannot be opened.
    public static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Voluntary + involuntary context switches of every thread of the process whose /proc
    /// folder is `processDirectory` (`/proc/PID`, or another PID namespace's seen through
    /// `/proc/PID1/root/proc/PID`), by thread id, with each thread's name.
    public static func contextSwitches(of processDirectory: String) -> [String: (name: String, count: Int)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: processDirectory + "/task")) ?? []
        var counts: [String: (name: String, count: Int)] = [:]
        for tid in tasks {
            guard let status = read(processDirectory + "/task/\(tid)/status") else { continue }
            var name = "?"
            var count = 0
            for line in status.split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2 else { continue }
                if parts[0] == "Name" { name = parts[1] }
                if parts[0].hasSuffix("ctxt_switches") { count += Int(parts[1]) ?? 0 }
            }
            counts[tid] = (name, count)
        }
        return counts
    }
}
