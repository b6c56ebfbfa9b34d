import CurlKit
import FetchdCore
import FetchdHandlers
import FetchdSnapshots
import Foundation

/// The targets for bytes a server sends or fetchd reads back from disk.
extension FuzzTarget {
    /// A fixed "now", so that an input means the same on every run.
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    /// The input as a response's header block, one line per `\n`, read as the header callback
    /// reads it; then every value the fetch takes from it is checked against what the daemon
    /// relies on.
    static func headers(_ data: Data) {
        var response = ResponseHeaders()
        // libcurl hands over one line at a time, its line ending included.
        for line in Array(data).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            (Array(line) + [UInt8(ascii: "\n")]).withUnsafeBytes { response.read(line: $0) }
        }
        precondition((0...999).contains(response.status), "a status outside 0...999: \(response.status)")
        // The server's floor on the next fetch: none, or a positive delay within the cap.
        for status in [response.status, 200, 304, 429, 503] {
            if let delay = ServerHints.delaySeconds(status: status, headers: response.fields, now: now) {
                precondition(delay > 0 && delay <= ServerHints.maximumSeconds, "a server delay of \(delay) s")
            }
        }
        if let range = response.contentRange {
            precondition(range.start >= 0 && (range.total.map { $0 > range.start } ?? true), "Content-Range \(range)")
        }
        if let length = response.contentLength { precondition(length >= 0, "Content-Length \(length)") }
        // If-Range never carries a weak ETag, nor text that is neither an entity tag nor a date.
        if let etag = response.fields["etag"], etag.hasPrefix("W/") { precondition(response.rangeValidator != etag, "a weak If-Range validator") }
        if let kept = response.rangeValidator.flatMap(TransferResumeRecord.rangeValidator) {
            precondition(kept.hasPrefix("\"") || HTTPDate.parse(kept) != nil, "If-Range validator \(kept)")
        }
        // A date read from a header and written back reads as the same second.
        for name in ["date", "expires", "last-modified", "retry-after"] {
            guard let text = response.fields[name], let date = HTTPDate.parse(text, now: now) else { continue }
            let again = HTTPDate.parse(HTTPDate.text(date), now: now)
            precondition(again.map { abs($0.timeIntervalSince(date)) < 1 } == true,
                         "\(name): \(text) read as \(date), written as \(HTTPDate.text(date)), read back as \(String(describing: again))")
        }
    }

    /// The input as a snapshot's `meta.json` and as a transfer's resume record. What decodes must
    /// encode to something that decodes to the same again: fetchd writes both files from what it
    /// read, and a reader (or the next start) must be able to read what it wrote.
    static func json(_ data: Data) {
        if let metadata = try? SnapshotMetadata.decode(data) {
            guard let written = try? metadata.encoded() else {
                preconditionFailure("meta.json that decodes does not encode: \(metadata)")
            }
            let reread: SnapshotMetadata
            do { reread = try SnapshotMetadata.decode(written) } catch {
                preconditionFailure("meta.json written by fetchd does not decode (\(error)): \(String(decoding: written, as: UTF8.self))")
            }
            let rewritten = try? reread.encoded()
            precondition(rewritten == written, "meta.json changes when read and written again")
        }
        if let record = TransferResumeRecord.decode(data) {
            guard let written = try? record.encoded(), let reread = TransferResumeRecord.decode(written) else {
                preconditionFailure("a resume record that decodes does not survive writing: \(record)")
            }
            precondition(reread == record, "a resume record changes when written and read: \(record) -> \(reread)")
        }
    }
}
