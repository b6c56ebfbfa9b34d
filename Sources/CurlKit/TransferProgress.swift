import Synchronization

/// Live progress of a resumable transfer, shared between the `HTTPClient` driver thread (which
/// writes the body) and whoever watches the download (status, the hasher, checkpoints).
///
/// Only counters cross threads, through atomics: the driver never waits for a watcher.
public final class TransferProgress: Sendable {
    /// Where the final response's body started in the output file, and what the server said
    /// about the resource; handed to `onBodyStart` before the first body byte is written.
    public struct BodyStart: Sendable, Equatable {
        /// The HTTP status of the response whose body follows (206 resumes, 200 starts afresh).
        public var status: Int
        /// The file offset the body is written from: the resume offset on a 206, else 0.
        public var offset: Int
        /// The whole resource's size, when the server said (Content-Range or Content-Length).
        public var totalBytes: Int?
        /// A validator for `If-Range` on a later resume: a strong ETag, else Last-Modified.
        public var validator: String?
        /// The Content-Type header, if any.
        public var contentType: String?
    }

    private let bytes = Atomic<Int>(0)
    private let total = Atomic<Int>(-1)
    private let restarts = Atomic<Int>(0)
    /// Called on the driver thread when the final response's body is about to be written
    /// (never for an error response, whose body is discarded). Keep it short: it holds up every
    /// transfer of the client.
    let onBodyStart: @Sendable (BodyStart) -> Void

    /// Creates progress for a file that already holds `bytesOnDisk` bytes (a resume).
    public init(bytesOnDisk: Int, onBodyStart: @escaping @Sendable (BodyStart) -> Void = { _ in }) {
        bytes.store(bytesOnDisk, ordering: .relaxed)
        self.onBodyStart = onBodyStart
    }

    /// Bytes of the resource in the output file now (written, in the page cache at least).
    public var bytesOnDisk: Int { bytes.load(ordering: .acquiring) }

    /// The resource's whole size, when known.
    public var totalBytes: Int? {
        let value = total.load(ordering: .relaxed)
        return value < 0 ? nil : value
    }

    /// How many times the output file started again from byte 0 during this transfer (the
    /// server ignored the range, or the resource changed). A reader that saw the same count
    /// before and after reading the file read bytes that belong to the current download.
    public var generation: Int { restarts.load(ordering: .acquiring) }

    // MARK: - Driver side

    func started(_ start: BodyStart) {
        if let totalBytes = start.totalBytes { total.store(totalBytes, ordering: .relaxed) }
        onBodyStart(start)
    }

    /// Marks a restart from byte 0; called before the file is truncated.
    func restarting() {
        restarts.add(1, ordering: .releasing)
        bytes.store(0, ordering: .releasing)
    }

    func wrote(upTo offset: Int) { bytes.store(offset, ordering: .releasing) }
}
