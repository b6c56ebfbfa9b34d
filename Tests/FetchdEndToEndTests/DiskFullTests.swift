import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A full disk (issue 7): the cache and the state database on small tmpfs mounts, private to the
/// daemon (a mount namespace; the test reaches them through /proc/PID/root). Fetches fail with a
/// clear reason, the previous snapshot stays whole, the daemon keeps serving, and once there is
/// room again fetching resumes and the results the database refused meanwhile are in history.
@Suite(.serialized)
struct DiskFullTests {
    static let unshare = ["/usr/bin/unshare", "/bin/unshare"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let canMount = getuid() == 0 && unshare != nil

    @Test(.enabled(if: DiskFullTests.canMount, "needs root and unshare to mount a private tmpfs"))
    func aFullDiskFailsFetchesClearlyKeepsTheSnapshotAndRecovers() async throws {
        let sizeFile = try TemporaryDirectory("disk-full-size")
        defer { sizeFile.remove() }
        let size = sizeFile.file("size")
        try "10000".write(toFile: size, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(handlers: """
            [[handler]]
            name = "blob"
            kind = "exec"
            command = ["/bin/sh", "-c", "head -c $(cat \(size)) /dev/urandom > \\"$FETCHD_OUTPUT\\""]
            min_interval = "1h"
            """, heartbeat: "1h")
        let cache = daemon.cachePath, state = daemon.directory.file("state")
        try await daemon.start(launcher: [try #require(Self.unshare), "--mount", "--propagation", "private", "/bin/sh", "-c", """
            mkdir -p '\(cache)' '\(state)' && mount -t tmpfs -o size=512k fetchd-cache '\(cache)' \
            && mount -t tmpfs -o size=512k fetchd-state '\(state)' && exec "$0" "$@"
            """])
        defer { daemon.stopAndReadLog() }
        let root = "/proc/\(daemon.process.processIdentifier)/root"
        let content = root + cache + "/blob/latest/content"
        #expect(await waitUntil(timeoutSeconds: 20) { FileManager.default.fileExists(atPath: content) })
        let before = try Data(contentsOf: URL(fileURLWithPath: content))

        // Fill both file systems, then fetch twice.
        let fillers = [root + cache + "/filler", root + state + "/filler"]
        for filler in fillers { try #require(Self.fill(filler) > 0) }
        try "100".write(toFile: size, atomically: true, encoding: .utf8)
        for _ in 0..<2 {
            let failed = try await daemon.fetchctlWithoutBlocking(["fetch", "blob", "--wait"])
            #expect(failed.status != 0 && failed.output.contains("No space left on device"), "\(failed.output)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: content)) == before, "the previous snapshot must stay whole")
        #expect(try await daemon.fetchctlWithoutBlocking(["ping"]).status == 0)

        // Room again: fetching resumes, and history has the two failures.
        for filler in fillers { try FileManager.default.removeItem(atPath: filler) }
        let recovered = try await daemon.fetchctlWithoutBlocking(["fetch", "blob", "--wait"])
        #expect(recovered.status == 0 && recovered.output.hasPrefix("blob: newData"), "\(recovered.output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: content)).count == 100)
        let history = try await daemon.fetchctlWithoutBlocking(["history", "blob"]).output
        #expect(history.components(separatedBy: "No space left on device").count - 1 == 2, "\(history)")
        _ = await daemon.stopWithoutBlocking()  // then the deferred stop has nothing to wait for
    }

    /// Writes zeros to `path` until the file system is full; returns the bytes written.
    static func fill(_ path: String) -> Int {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0, count: 4096)
        var total = 0
        while true {
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { return total }
            total += written
        }
    }
}
