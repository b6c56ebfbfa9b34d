import FetchdSystemd
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A handler's newest content as `OpenSnapshot` passed it: a read-only file descriptor, owned
/// by this object and closed in `deinit`, and the metadata of the same version. A descriptor
/// rather than a path: a sandboxed application cannot reach the cache, and a fetch that
/// publishes meanwhile (or evicts this version) does not change what it reads.
public final class Snapshot: Sendable {
    /// What fetchd knows of the version (fetchd-snapshots(7)'s `meta.json`).
    public struct Metadata: Sendable, Equatable {
        /// The version's name (`00000001-...`), as `FetchCompleted` names it.
        public let version: String
        /// When it was fetched.
        public let fetchedAt: Date
        /// The content's size in bytes.
        public let bytes: UInt64
        /// The content's SHA-256, in hex.
        public let sha256: String
        /// The server's `Content-Type`, when it sent one.
        public let contentType: String?
        /// The server's `ETag`, when it sent one.
        public let etag: String?
        /// The server's `Last-Modified`, when it sent one.
        public let lastModified: String?

        /// Reads the `a{sv}` of `OpenSnapshot`; throws when a key fetchd always sends is missing.
        init(_ entries: [String: BusOption]) throws(FetchdError) {
            guard case .string(let version) = entries["version"],
                  case .unsigned(let fetchedAt) = entries["fetched_at"],
                  case .unsigned(let bytes) = entries["bytes"],
                  case .string(let sha256) = entries["sha256"] else {
                throw FetchdError(name: FetchdError.Name.inconsistentMessage,
                                  message: "OpenSnapshot's metadata lacks version, fetched_at, bytes or sha256: \(entries)")
            }
            self.version = version
            // Microseconds since 1970, as systemd's D-Bus APIs give times.
            self.fetchedAt = Date(timeIntervalSince1970: Double(fetchedAt) / 1_000_000)
            self.bytes = bytes
            self.sha256 = sha256
            func text(_ key: String) -> String? { if case .string(let value) = entries[key] { value } else { nil } }
            contentType = text("content_type")
            etag = text("etag")
            lastModified = text("last_modified")
        }
    }

    /// The version's metadata.
    public let metadata: Metadata
    /// The content, open read-only; valid as long as this object. Read it with `read()`, or
    /// map or hand it on (duplicate it to keep it past this object).
    public let fileDescriptor: Int32

    /// Takes ownership of `fileDescriptor`.
    init(fileDescriptor: Int32, metadata: Metadata) {
        self.fileDescriptor = fileDescriptor
        self.metadata = metadata
    }

    deinit { close(fileDescriptor) }

    /// The whole content. Reads from the start with `pread`, so it may be called again, and from
    /// several threads at once.
    public func read() throws(FetchdError) -> Data {
        var content = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(fileDescriptor, $0.baseAddress, $0.count, off_t(content.count)) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                throw FetchdError(name: FetchdError.Name.clientFailed,
                                  message: "cannot read the snapshot \(metadata.version): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return content }
            content.append(contentsOf: buffer[..<count])
        }
    }
}
