import FetchdState
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Background transfers on the real daemon against a range-serving loopback server: SIGKILLs
/// in the middle of a 200 MB download, and a pause when NetworkManager says the network became
/// metered. Every finished file is compared with the source by SHA-256. The tests wait on files
/// and processes (never blocking a thread of the shared pool) and assert no durations.
@Suite(.serialized)
struct TransferEndToEndTests {
    static let mebibyte = 1024 * 1024

    /// `bytes` of random data in `folder/name`; returns its SHA-256.
    /// (Programs run by polling: this suite runs beside suites that time things, and the shared
    /// pool has two threads.)
    private func makeSource(in folder: TemporaryDirectory, name: String, mebibytes: Int) async throws -> String {
        let file = folder.file(name)
        let result = try await ChildProcess.runWithoutBlocking("/bin/sh", ["-c", "head -c \(mebibytes)M /dev/urandom > '\(file)'"])
        #expect(result.status == 0, "\(result.output)")
        return try await sha256(of: file)
    }

    private func sha256(of path: String) async throws -> String {
        String(try await ChildProcess.runWithoutBlocking("/usr/bin/sha256sum", [path]).output.prefix(64))
    }

    private func size(of path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    private static func handler(url: String, sha256: String, extra: String = "") -> String {
        """
        [[handler]]
        name = "big"
        kind = "transfer"
        url = "\(url)"
        sha256 = "\(sha256)"
        min_interval = "1d"
        \(extra)
        """
    }

    @Test func sigkillsDuringA200MiBDownloadLoseNothingAndDownloadItOnce() async throws {
        let source = try TemporaryDirectory("fetchd-transfer-source")
        defer { source.remove() }
        let digest = try await makeSource(in: source, name: "big.bin", mebibytes: 200)
        let server = try RangeServer(folder: source.path, file: "big.bin")
        defer { server.stop() }
        try await server.control("rate/40000000")  // about 5 s in all: room for kills in the middle
        let daemon = try DaemonProcess(handlers: Self.handler(url: server.url, sha256: digest), heartbeat: "1h")
        try await daemon.start()
        let partial = daemon.cachePath + "/big/.transfer/partial"
        var sizesAtKill: [Int] = []
        for mark in [30, 90, 150] {
            let reached = await waitUntil(timeoutSeconds: 120) { size(of: partial) >= mark * Self.mebibyte }
            #expect(reached, "the download never reached \(mark) MiB")
            sizesAtKill.append(size(of: partial))
            try await daemon.killAndRestart()
        }
        let content = daemon.cachePath + "/big/latest/content"
        #expect(await waitUntil(timeoutSeconds: 180) { FileManager.default.fileExists(atPath: content) },
                "the download never finished after the kills")
        #expect(try await sha256(of: content) == digest, "the resumed file is not byte-identical")
        #expect(!FileManager.default.fileExists(atPath: partial), "the partial file became the snapshot")

        let stats = try await server.stats()
        let total = 200 * Self.mebibyte
        // Each kill may lose what was in flight (socket buffers), never what reached the file.
        #expect(stats.sent <= total + 3 * 16 * Self.mebibyte, "sent \(stats.sent) bytes for a \(total)-byte file")
        #expect(stats.requests.first?.start == -1)
        for (index, request) in stats.requests.dropFirst().enumerated() {
            #expect(request.status == 206, "request \(index + 1) was not resumed: \(stats.requests)")
            #expect(request.start >= sizesAtKill[min(index, sizesAtKill.count - 1)], "\(stats.requests) vs \(sizesAtKill)")
        }
        let history = try StateStore(path: daemon.directory.file("state/state.sqlite")).history(of: "big", limit: 10)
        #expect(history.map(\.result) == [.newData], "killed runs record nothing; the finished one records newData")
        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
    }

    @Test func meteredNetworkPausesARunningTransferAndUnmeteredResumesIt() async throws {
        let source = try TemporaryDirectory("fetchd-transfer-source")
        defer { source.remove() }
        let digest = try await makeSource(in: source, name: "big.bin", mebibytes: 12)
        let server = try RangeServer(folder: source.path, file: "big.bin")
        defer { server.stop() }
        try await server.control("rate/2000000")
        let copy = source.file("copy.bin")
        let daemon = try DaemonProcess(
            handlers: Self.handler(url: server.url, sha256: digest, extra: """
                network = "unmetered"
                on_complete = ["/bin/sh", "-c", "cp \\"$1\\" '\(copy)'", "on-complete"]
                """),
            heartbeat: "1h")
        let bus = PrivateBus(socketPath: daemon.directory.file("system_bus_socket"))
        try await bus.start()
        let manager = try await FakeNetworkManager(address: bus.address, metered: 4, connectivity: 4)
        try await daemon.start(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        #expect(try await manager.waitForMatches(atLeast: 2), "fetchd never followed NetworkManager")
        let partial = daemon.cachePath + "/big/.transfer/partial"
        #expect(await waitUntil(timeoutSeconds: 60) { size(of: partial) >= 2 * Self.mebibyte }, "the transfer never started")
        let running = try await daemon.fetchctlWithoutBlocking(["transfers"]).output
        #expect(running.contains("running") && running.contains("MiB of 12.0 MiB"), "\(running)")

        // Metered: the transfer stops where it is and waits.
        try await manager.send("metered 1")
        var text = ""
        #expect(try await eventually(timeoutSeconds: 30, pollMilliseconds: 300) {
            text = try await daemon.fetchctlWithoutBlocking(["transfers"]).output
            return text.contains("paused: waiting for an unmetered network")
        }, "\(text)")
        let pausedAt = size(of: partial)
        try await Task.sleep(for: .seconds(1.5))
        #expect(size(of: partial) == pausedAt, "a paused transfer kept downloading")
        #expect(pausedAt < 12 * Self.mebibyte)

        // Unmetered again: it resumes from where it stopped and finishes.
        try await server.control("rate/0")
        try await manager.send("metered 2")
        let content = daemon.cachePath + "/big/latest/content"
        #expect(await waitUntil(timeoutSeconds: 60) { FileManager.default.fileExists(atPath: copy) }, "never finished")
        #expect(try await sha256(of: content) == digest)
        #expect(try await sha256(of: copy) == digest, "on_complete got the finished file's path")
        let requests = try await server.stats().requests
        #expect(requests.count == 2 && requests[1].status == 206 && requests[1].start == pausedAt, "\(requests)")

        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
        #expect(log.contains("big: transfer paused at \(pausedAt) bytes: waiting for an unmetered network"), "\(log)")
        #expect(log.contains("big: on_complete finished"), "\(log)")
    }

    @Test func transferMaxActiveRunsOneTransferAtATime() async throws {
        let source = try TemporaryDirectory("fetchd-transfer-source")
        defer { source.remove() }
        let digest = try await makeSource(in: source, name: "big.bin", mebibytes: 3)
        let server = try RangeServer(folder: source.path, file: "big.bin")
        defer { server.stop() }
        try await server.control("rate/3000000")
        let handlers = ["one", "two"].map {
            Self.handler(url: server.url, sha256: digest).replacingOccurrences(of: "name = \"big\"", with: "name = \"\($0)\"")
        }
        let daemon = try DaemonProcess(handlers: handlers.joined(separator: "\n"), heartbeat: "1h",
                                       extraMain: "transfer_max_active = 1")
        try await daemon.start()
        let partial = { (name: String) in daemon.cachePath + "/\(name)/.transfer/partial" }
        let content = { (name: String) in daemon.cachePath + "/\(name)/latest/content" }
        // Whichever starts first must be published before the other's partial file appears.
        var overlapped = false
        let bothDone = await waitUntil(timeoutSeconds: 60) {
            let growing = ["one", "two"].filter {
                FileManager.default.fileExists(atPath: partial($0)) && !FileManager.default.fileExists(atPath: content($0))
            }
            if growing.count > 1 { overlapped = true }
            return FileManager.default.fileExists(atPath: content("one")) && FileManager.default.fileExists(atPath: content("two"))
        }
        #expect(bothDone, "both transfers finish, one after the other")
        #expect(!overlapped, "two transfers ran at once with transfer_max_active = 1")
        let digests = (try await sha256(of: content("one")), try await sha256(of: content("two")))
        #expect(digests.0 == digest && digests.1 == digest)
        let (exit, log) = await daemon.stopWithoutBlocking()
        #expect(exit == 0, "\(log)")
    }
}
