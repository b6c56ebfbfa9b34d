import CurlKit
import Crypto
import FetchdCore
import FetchdHandlers
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Background transfers against a real range-serving HTTP server on loopback: resume with
/// Range + If-Range, a server without ranges, a resource that changes, error pages, checksums,
/// pausing. Every finished file is compared with the source by SHA-256.
@Suite(.serialized)
struct BackgroundTransferTests {
    let folder: TemporaryDirectory
    let server: RangeServer
    let files: BackgroundTransfer.Files
    static let size = 3 * 1024 * 1024 + 123

    init() throws {
        folder = try TemporaryDirectory("fetchd-transfer")
        for (name, seed) in [("a.bin", UInt8(1)), ("b.bin", UInt8(7))] {
            var generator = seed
            let bytes = (0..<Self.size).map { index -> UInt8 in
                generator = generator &* 31 &+ UInt8(truncatingIfNeeded: index >> 7)
                return generator
            }
            FileManager.default.createFile(atPath: folder.file(name), contents: Data(bytes))
        }
        try FileManager.default.createDirectory(atPath: folder.file("work"), withIntermediateDirectories: true)
        files = BackgroundTransfer.Files(directory: folder.file("work"))
        server = try RangeServer(folder: folder.path, file: "a.bin")
    }

    func transfer() -> BackgroundTransfer {
        BackgroundTransfer(url: server.url, maxBytes: Defaults.transferMaxBytes, client: .shared)
    }

    func digest(of path: String) throws -> String {
        HexText.lowercase(SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// A partial file holding the first `bytes` of `name`, with the record a killed run leaves.
    func leavePartial(of name: String, bytes: Int) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: folder.file(name)))
        FileManager.default.createFile(atPath: files.partial, contents: data.prefix(bytes))
        try TransferResumeRecord(url: server.url, validator: "\"\(name)-\(Self.size)\"", totalBytes: Self.size,
                                 contentType: nil, startedAt: Date()).write(to: files.record)
    }

    func completed(_ outcome: BackgroundTransfer.Outcome) throws -> BackgroundTransfer.Completed {
        guard case .complete(let done) = outcome else {
            Issue.record("expected a complete transfer, got \(outcome)")
            throw CancellationError()
        }
        return done
    }

    @Test func downloadsWholeAndHashesWhileDownloading() async throws {
        defer { server.stop(); folder.remove() }
        let done = try completed(await transfer().run(files: files))
        #expect(done.bytes == Self.size)
        #expect(done.sha256 == (try digest(of: folder.file("a.bin"))))
        #expect(try digest(of: files.partial) == done.sha256)
        #expect(done.details["resumed_from"] == "0")
        #expect(TransferResumeRecord.read(from: files.record)?.validator == "\"a.bin-\(Self.size)\"",
                "the record names the version before the body is written")
    }

    /// A 304 to the first, unconditional request: there is no file to keep, so it fails.
    @Test func a304ToAnUnconditionalRequestFails() async throws {
        defer { server.stop(); folder.remove() }
        let answering = try TestHTTPServer(.conditional)
        defer { answering.stop() }
        let outcome = await BackgroundTransfer(url: answering.url("/always-304"), maxBytes: 1024, client: .shared).run(files: files)
        guard case .failed(let reason, _, let kept) = outcome else {
            Issue.record("expected a failure, got \(outcome)"); return
        }
        #expect(reason.hasPrefix("HTTP 304 (not modified) to a request that was not conditional") && kept == 0, "\(reason)")
    }

    @Test func resumesFromThePartialFileWithIfRange() async throws {
        defer { server.stop(); folder.remove() }
        let kept = 1_000_000
        try leavePartial(of: "a.bin", bytes: kept)
        let done = try completed(await transfer().run(files: files))
        #expect(done.sha256 == (try digest(of: folder.file("a.bin"))))
        let stats = try await server.stats()
        #expect(stats.requests.map(\.start) == [kept])
        #expect(stats.requests.map(\.status) == [206])
        #expect(stats.sent == Self.size - kept, "only the missing bytes are downloaded")
        #expect(done.details["downloaded_bytes"] == String(Self.size - kept))
    }

    @Test func serverWithoutRangesStartsAfresh() async throws {
        defer { server.stop(); folder.remove() }
        try await server.control("mode/norange")
        try leavePartial(of: "a.bin", bytes: 500_000)
        let done = try completed(await transfer().run(files: files))
        #expect(done.sha256 == (try digest(of: folder.file("a.bin"))), "a 200 replaces the partial file, never appends")
        #expect(try await server.stats().requests.map(\.status) == [200])
    }

    @Test func changedResourceRestartsThroughIfRange() async throws {
        defer { server.stop(); folder.remove() }
        try leavePartial(of: "a.bin", bytes: 2_000_000)
        try await server.control("serve/b.bin")  // the resource changed since the partial file began
        let done = try completed(await transfer().run(files: files))
        #expect(done.sha256 == (try digest(of: folder.file("b.bin"))), "no bytes of the old version survive")
        #expect(try await server.stats().requests.map(\.status) == [200])
    }

    @Test func errorPageNeverLandsInThePartialFile() async throws {
        defer { server.stop(); folder.remove() }
        let kept = 700_000
        try leavePartial(of: "a.bin", bytes: kept)
        try await server.control("fail/1")
        guard case .failed(let reason, let answer, let keptBytes) = await transfer().run(files: files) else {
            Issue.record("a 503 must fail the run")
            return
        }
        #expect(reason == "HTTP 503")
        #expect(keptBytes == kept)
        #expect(answer?.delaySeconds != nil, "Retry-After is passed on")
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: files.partial))
        #expect(onDisk == (try Data(contentsOf: URL(fileURLWithPath: folder.file("a.bin")))).prefix(kept))
        // The next run resumes where the file ends.
        let done = try completed(await transfer().run(files: files))
        #expect(done.sha256 == (try digest(of: folder.file("a.bin"))))
    }

    @Test func aLostConnectionKeepsWhatArrivedAndTheNextRunResumes() async throws {
        defer { server.stop(); folder.remove() }
        let cut = 1_234_567
        try await server.control("drop/\(cut)")
        guard case .failed(let reason, _, let keptBytes) = await transfer().run(files: files) else {
            Issue.record("a connection lost mid-body must fail the run")
            return
        }
        #expect(keptBytes == cut, "\(reason)")
        #expect(reason.contains("interrupted at \(cut) of \(Self.size) bytes; it resumes from there"), "\(reason)")
        let done = try completed(await transfer().run(files: files))
        #expect(done.sha256 == (try digest(of: folder.file("a.bin"))))
        let stats = try await server.stats()
        #expect(stats.requests.map(\.start) == [-1, cut] && stats.sent == Self.size, "\(stats)")
    }

    @Test func checksumMismatchIsRefusedAndStartsAfresh() async throws {
        defer { server.stop(); folder.remove() }
        var wrong = transfer()
        wrong.expectedSHA256 = String(repeating: "0", count: 64)
        guard case .failed(let reason, _, let keptBytes) = await wrong.run(files: files) else {
            Issue.record("a wrong checksum must fail")
            return
        }
        #expect(reason.contains("checksum mismatch"))
        #expect(keptBytes == 0)
        #expect(!FileManager.default.fileExists(atPath: files.partial))
    }

    @Test func partialThatIsAlreadyWholeIsNotDownloadedAgain() async throws {
        defer { server.stop(); folder.remove() }
        try leavePartial(of: "a.bin", bytes: Self.size)
        let done = try completed(await transfer().run(files: files))
        #expect(done.sha256 == (try digest(of: folder.file("a.bin"))))
        #expect(try await server.stats().sent == 0)
    }

    @Test func cancellingKeepsThePartialFile() async throws {
        defer { server.stop(); folder.remove() }
        try await server.control("rate/1000000")
        let job = transfer()
        let progress = ProgressBox()
        let files = self.files
        let task = Task { await job.run(files: files) { progress.set($0) } }
        let started = await waitUntil(timeoutSeconds: 20) { (progress.get()?.bytesOnDisk ?? 0) > 300_000 }
        #expect(started)
        task.cancel()
        guard case .interrupted(let kept) = await task.value else {
            Issue.record("a cancelled transfer is interrupted")
            return
        }
        #expect(kept > 0 && kept < Self.size)
        // The rate stays: lifted, the server would pour the rest of the file into the socket
        // buffers of the abandoned connection in the instant before it is seen closed, and count it.
        let done = try completed(await transfer().run(files: files))
        #expect(done.sha256 == (try digest(of: folder.file("a.bin"))))
        let stats = try await server.stats()
        #expect(stats.requests.last?.start ?? -1 >= kept, "resumed where the cancelled run stopped")
        #expect(stats.sent <= Self.size + 1024 * 1024, "downloaded once, plus at most the bytes in flight")
    }
}

extension BackgroundTransferTests {
    /// `max_bytes_per_second` holds: an upper bound only (a slow machine only downloads less).
    @Test func receiveRateLimitHolds() async throws {
        defer { server.stop(); folder.remove() }
        var limited = transfer()
        limited.maxBytesPerSecond = 400_000
        let progress = ProgressBox()
        let files = self.files
        let started = ContinuousClock.now
        let task = Task { await limited.run(files: files) { progress.set($0) } }
        #expect(await waitUntil(timeoutSeconds: 20) { (progress.get()?.bytesOnDisk ?? 0) > 0 })
        try await Task.sleep(for: .seconds(2))
        let bytes = progress.get()?.bytesOnDisk ?? 0
        let seconds = Double((ContinuousClock.now - started) / .milliseconds(1)) / 1000
        task.cancel()
        _ = await task.value
        // libcurl averages the rate; one receive buffer may arrive before it throttles.
        #expect(Double(bytes) <= 400_000 * seconds + Double(Defaults.transferReceiveBufferBytes),
                "\(bytes) bytes in \(seconds) s at 400 kB/s")
    }
}

/// Holds the progress a transfer reports, for a test to watch.
final class ProgressBox: @unchecked Sendable {
    private let lock = NSLock()
    private var progress: TransferProgress?
    func set(_ value: TransferProgress) { lock.withLock { progress = value } }
    func get() -> TransferProgress? { lock.withLock { progress } }
}

/// Which validators a resume record keeps for `If-Range`.
@Suite struct TransferRangeValidatorTests {
    @Test func entityTagsAndDatesAreKept() {
        #expect(TransferResumeRecord.rangeValidator("\"v1\"") == "\"v1\"")
        #expect(TransferResumeRecord.rangeValidator("Sat, 05 Nov 1994 08:49:37 GMT") == "Sat, 05 Nov 1994 08:49:37 GMT")
    }

    /// A Last-Modified that is not a date names no version: the transfer starts afresh instead.
    @Test func textThatNamesNoVersionIsNot() {
        #expect(TransferResumeRecord.rangeValidator("W/t, 25 Nov Int4 08:T@/1.1") == nil)
        #expect(TransferResumeRecord.rangeValidator("\"") == nil)
        #expect(TransferResumeRecord.rangeValidator("") == nil)
    }
}
