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
}
