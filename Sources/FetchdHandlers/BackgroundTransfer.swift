import CurlKit
import FetchdCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Downloads one large resource outside any fetch deadline (iOS's background URLSession), so
/// that a restart, a crash, a lost network or a SIGKILL costs only the bytes in flight.
///
/// The partial file and its `TransferResumeRecord` live in the handler's `.transfer` folder.
/// A run continues the partial file with `Range` + `If-Range`; a server without ranges, or a
/// resource that changed, answers with the whole resource, which starts the file afresh. The
/// file is hashed while it downloads (`FollowingHasher`). Cancelling the calling task (a pause
/// or shutdown) keeps the partial file for the next run.
public struct BackgroundTransfer: Sendable {
    /// Where a handler's transfer keeps its work in progress.
    public struct Files: Sendable {
        /// The partial download; on success, the file to publish.
        public var partial: String
        /// Its resume record.
        public var record: String

        /// Files in `directory` (the handler's `.transfer` folder).
        public init(directory: String) {
            partial = directory + "/partial"
            record = directory + "/resume.json"
        }
    }

    /// A finished download, still at `Files.partial`.
    public struct Completed: Sendable {
        /// SHA-256 of the whole file, lower-case hex.
        public var sha256: String
        /// Its size in bytes.
        public var bytes: Int
        /// The Content-Type, when the server sent one.
        public var contentType: String?
        /// For the snapshot's metadata: status, URLs, where it resumed, bytes this run.
        public var details: [String: String]
        /// The validators of the file now in hand (nil when it was verified without a response).
        public var answer: ServerAnswer?
    }

    /// How a run ended.
    public enum Outcome: Sendable {
        /// The whole file is downloaded and verified.
        case complete(Completed)
        /// It failed; `keptBytes` of the partial file are kept for the next run (0: it starts
        /// afresh). `answer` carries the server's Retry-After, when it sent one.
        case failed(reason: String, answer: ServerAnswer?, keptBytes: Int)
        /// Stopped from outside (pause, shutdown); the partial file is kept.
        case interrupted(keptBytes: Int)
        /// The server said the resource has not changed since the snapshot in hand (304).
        case notModified(details: [String: String])
    }

    /// The URL to download.
    public var url: String
    /// Extra request headers, `Name: value`.
    public var headers: [String] = []
    /// The User-Agent header.
    public var userAgent = "fetchd/\(Defaults.version)"
    /// A proxy URL (nil: libcurl's environment handling).
    public var proxy: String?
    /// CA certificates to trust instead of the system's.
    public var caFile: String?
    /// Whether every connection must go to a global address (`HTTPRequest.globalAddressesOnly`).
    public var globalAddressesOnly = false
    /// The expected SHA-256 (lower-case hex), if known.
    public var expectedSHA256: String?
    /// The largest file accepted, in bytes.
    public var maxBytes: Int
    /// Receive at most this many bytes per second (0: no limit).
    public var maxBytesPerSecond = 0
    /// A transfer that receives nothing for this long is interrupted, to resume later.
    public var stallSeconds = Defaults.transferStallSeconds
    /// The client whose multi handle runs the download.
    public var client: HTTPClient
    /// Validators of the snapshot in hand, sent when a transfer starts from byte 0 so an
    /// unchanged resource is not downloaded again.
    public var currentValidators: HTTPValidators?

    /// Creates a transfer of `url`.
    public init(url: String, maxBytes: Int, client: HTTPClient) {
        self.url = url
        self.maxBytes = maxBytes
        self.client = client
    }

    /// Downloads (or resumes) into `files.partial`. `watch` gets each attempt's live progress.
    public func run(files: Files, watch: @Sendable (TransferProgress) -> Void = { _ in }) async -> Outcome {
        // A partial file the server's ranges cannot continue starts afresh, once.
        for _ in 0..<2 {
            switch await attempt(files: files, watch: watch) {
            case .finished(let outcome): return outcome
            case .startAfresh: discard(files)
            }
        }
        return .failed(reason: "the server's byte ranges did not continue the download twice in a row",
                       answer: nil, keptBytes: 0)
    }

    /// Removes the partial file and its record: the next run starts from byte 0.
    public func discard(_ files: Files) {
        unlink(files.partial)
        unlink(files.record)
    }

    /// How one attempt ended: with an outcome, or asking to start again from byte 0.
    enum Attempt { case finished(Outcome), startAfresh }

    private func attempt(files: Files, watch: @Sendable (TransferProgress) -> Void) async -> Attempt {
        var saved = TransferResumeRecord.read(from: files.record).flatMap { $0.url == url ? $0 : nil }
        // Read as written: only a validator If-Range can carry lets the file be continued.
        if let validator = saved?.validator { saved?.validator = TransferResumeRecord.rangeValidator(validator) }
        var offset = Self.size(of: files.partial)
        if offset > 0, saved?.validator == nil {
            discard(files)  // no validator: its bytes cannot be matched to a version of the resource
            offset = 0
        }
        // The file exists from the start, so the hasher can open it before the first byte.
        // Not through a symbolic link planted in the cache: the partial file is fetchd's own.
        let fd = open(files.partial, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            return .finished(.failed(reason: "cannot create \(files.partial): \(String(cString: strerror(errno)))",
                                     answer: nil, keptBytes: 0))
        }
        close(fd)
        let startedAt = (offset > 0 ? saved?.startedAt : nil) ?? Date()
        let progress = TransferProgress(bytesOnDisk: offset) { [url] start in
            // On the driver thread, before the body's first byte: the record names the version.
            let record = TransferResumeRecord(url: url, validator: start.validator.flatMap(TransferResumeRecord.rangeValidator),
                                              totalBytes: start.totalBytes,
                                              contentType: start.contentType,
                                              startedAt: start.offset == 0 ? Date() : startedAt)
            try? record.write(to: files.record)
        }
        watch(progress)
        // Downloaded completely before fetchd stopped, but not published: nothing to ask for.
        if let saved, let total = saved.totalBytes, total > 0, offset == total {
            let (_, digest) = await hash(files, progress: progress, whileDownloading: nil)
            return verify(files, digest: digest, response: nil, resumedFrom: offset, saved: saved)
        }
        var request = HTTPRequest(url: url, outputPath: files.partial, userAgent: userAgent, timeoutMilliseconds: nil,
                                  maxBytes: maxBytes)
        request.resume = HTTPRequest.Resume(offset: offset, validator: saved?.validator, progress: progress)
        request.headers = headers
        request.proxy = proxy
        request.caFile = caFile
        request.globalAddressesOnly = globalAddressesOnly
        request.maxReceiveBytesPerSecond = maxBytesPerSecond
        request.lowSpeedSeconds = max(1, Int(stallSeconds))
        // libcurl checks a rate limit only between bursts of up to 100 reads of its receive
        // buffer, so with a large buffer a limited transfer takes megabytes at full speed first
        // (curl issue 5788): a limit shrinks the buffer to keep each burst near a quarter second.
        request.receiveBufferBytes = maxBytesPerSecond > 0
            ? min(Defaults.transferReceiveBufferBytes, max(1024, maxBytesPerSecond / 400))
            : Defaults.transferReceiveBufferBytes
        if offset == 0 {
            request.ifNoneMatch = currentValidators?.etag
            request.ifModifiedSince = currentValidators?.lastModified
        }
        let (outcome, digest) = await hash(files, progress: progress) { [client, request] in
            do throws(HTTPFailure) { return .success(try await client.fetch(request)) } catch { return .failure(error) }
        }
        if case .failure = digest {  // the hasher stopped the download: say why
            return verify(files, digest: digest, response: nil, resumedFrom: offset, saved: saved)
        }
        let response: HTTPResponse
        switch outcome {
        case .success(let value)?: response = value
        case .failure(let error)?: return failed(error, files: files, progress: progress)
        case nil: return .finished(.interrupted(keptBytes: progress.bytesOnDisk))
        }
        switch response.status {
        case 200..<300:
            return verify(files, digest: digest, response: response, resumedFrom: offset, saved: saved)
        case 304 where request.isConditional:
            discard(files)
            return .finished(.notModified(details: ["status": "304", "request_url": url]))
        case 304:
            discard(files)
            return .finished(.failed(reason: HTTPHandler.unaskedNotModified,
                                     answer: ServerAnswer(status: response.status, headers: response.headers), keptBytes: 0))
        case 416 where saved?.totalBytes == offset && offset > 0:
            // Asked for the bytes after the end: the partial file is the whole resource.
            return verify(files, digest: digest, response: response, resumedFrom: offset, saved: saved)
        case 416:
            return .startAfresh
        default:
            // Busy or failing servers get another try later; other errors mean the resource is gone.
            let transient = [408, 425, 429].contains(response.status) || response.status >= 500
            if !transient { discard(files) }
            return .finished(.failed(reason: "HTTP \(response.status)",
                                     answer: ServerAnswer(status: response.status, headers: response.headers),
                                     keptBytes: transient ? progress.bytesOnDisk : 0))
        }
    }
}
