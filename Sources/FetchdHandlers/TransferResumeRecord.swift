import FetchdCore
import Foundation

/// What a partial download needs to be resumed safely, kept beside the partial file.
///
/// Written (replaced by a rename) the moment a response's body starts, before its first byte
/// reaches the partial file, so a partial file is never on disk without the validator that
/// says which version of the resource it holds. The partial file's own size is the progress:
/// every byte in it was written before fetchd could be killed, so nothing is downloaded twice.
public struct TransferResumeRecord: Codable, Sendable, Equatable {
    /// The URL the partial file came from; another URL starts afresh.
    public var url: String
    /// Sent as `If-Range` when resuming (a strong ETag or Last-Modified); without one a partial
    /// file cannot be resumed safely and starts afresh.
    public var validator: String?
    /// The resource's whole size, when the server said.
    public var totalBytes: Int?
    /// The Content-Type, for the snapshot's metadata.
    public var contentType: String?
    /// When the transfer (this version of the resource) started, for rate and ETA.
    public var startedAt: Date

    /// Creates a record.
    public init(url: String, validator: String?, totalBytes: Int?, contentType: String?, startedAt: Date) {
        self.url = url
        self.validator = validator
        self.totalBytes = totalBytes
        self.contentType = contentType
        self.startedAt = startedAt
    }

    /// `text` (a strong ETag, else Last-Modified) when `If-Range` can carry it: a quoted entity
    /// tag, or an HTTP date. A Last-Modified that is not a date names no version (a server
    /// compares If-Range's date to the resource's, or takes other text for an entity tag), so a
    /// partial file under it could be continued with another version's bytes: it is not kept,
    /// and the transfer starts afresh instead.
    public static func rangeValidator(_ text: String) -> String? {
        if text.hasPrefix("\""), text.count >= 2, text.hasSuffix("\"") { return text }
        return HTTPDate.parse(text) != nil ? text : nil
    }

    /// Reads the record at `path`; nil when there is none or it cannot be understood (the
    /// partial file then starts afresh, which is always safe).
    public static func read(from path: String) -> TransferResumeRecord? {
        FileManager.default.contents(atPath: path).flatMap(decode)
    }

    /// The record `data` holds, as `encoded()` writes it; nil when it is not one.
    public static func decode(_ data: Data) -> TransferResumeRecord? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(TransferResumeRecord.self, from: data)
    }

    /// The file's bytes: JSON with sorted keys, dates in seconds since 1970.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(self)
    }

    /// Replaces the record at `path` with a rename, so a reader sees the old or the new one whole.
    /// Not fsynced: it guards against a killed daemon, and after a power loss a partial file
    /// whose record is lost starts afresh.
    public func write(to path: String) throws {
        let temporary = path + ".tmp"
        try encoded().write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
}
