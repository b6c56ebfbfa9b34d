import FetchdCore
#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// What fetchd records next to every snapshot version, as `meta.json`.
public struct SnapshotMetadata: Codable, Sendable, Equatable {
    /// The handler that produced the snapshot.
    public var handler: String
    /// The version's directory name, e.g. `00000042-20261121T083012Z`.
    public var version: String
    /// When the fetch finished.
    public var fetchedAt: Date
    /// The fetch result that produced it (always `newData` for a written version).
    public var result: String
    /// How long the fetch took, in milliseconds.
    public var durationMilliseconds: Int
    /// Size of the content, in bytes.
    public var bytes: Int
    /// Lower-case hex SHA-256 of the content.
    public var sha256: String
    /// The content's media type, when known.
    public var contentType: String?
    /// What started the fetch (timer, manual, push, usage).
    public var trigger: String
    /// Handler-kind details, e.g. the HTTP status and final URL.
    public var details: [String: String]

    /// Creates metadata.
    public init(handler: String, version: String = "", fetchedAt: Date, result: String = "newData",
                durationMilliseconds: Int, bytes: Int = 0, sha256: String = "", contentType: String? = nil,
                trigger: String, details: [String: String] = [:]) {
        self.handler = handler
        self.version = version
        self.fetchedAt = fetchedAt
        self.result = result
        self.durationMilliseconds = durationMilliseconds
        self.bytes = bytes
        self.sha256 = sha256
        self.contentType = contentType
        self.trigger = trigger
        self.details = details
    }

    enum CodingKeys: String, CodingKey {
        case handler, version, result, bytes, sha256, trigger, details
        case fetchedAt = "fetched_at"
        case durationMilliseconds = "duration_ms"
        case contentType = "content_type"
    }

    /// The JSON written to disk: sorted keys, two-space indent and ISO-8601 dates, so files diff
    /// cleanly. Written by hand: JSONEncoder was the largest single cost of a commit, and the
    /// shape is fixed. `decode` reads it (and anything else JSONEncoder would have written).
    public func encoded() throws -> Data {
        // Appended as bytes into one buffer: building it from interpolated strings was most of
        // the cost of a small fetch's commit.
        var out: [UInt8] = []
        out.reserveCapacity(512 + details.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 12 })
        func field(_ name: StaticString, first: Bool = false) {
            out.append(contentsOf: (first ? "{\n  \"" : ",\n  \"").utf8)
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out.append(contentsOf: "\" : ".utf8)
        }
        field("bytes", first: true)
        out.append(contentsOf: String(bytes).utf8)
        if let contentType {
            field("content_type")
            Self.appendQuoted(contentType, to: &out)
        }
        field("details")
        if details.isEmpty {
            out.append(contentsOf: "{ }".utf8)
        } else {
            for (index, (key, value)) in details.sorted(by: { $0.key < $1.key }).enumerated() {
                out.append(contentsOf: (index == 0 ? "{\n    " : ",\n    ").utf8)
                Self.appendQuoted(key, to: &out)
                out.append(contentsOf: " : ".utf8)
                Self.appendQuoted(value, to: &out)
            }
            out.append(contentsOf: "\n  }".utf8)
        }
        field("duration_ms")
        out.append(contentsOf: String(durationMilliseconds).utf8)
        field("fetched_at")
        Self.appendQuoted(Self.isoText(fetchedAt), to: &out)
        for (name, value) in [("handler", handler), ("result", result), ("sha256", sha256), ("trigger", trigger),
                              ("version", version)] as [(StaticString, String)] {
            field(name)
            Self.appendQuoted(value, to: &out)
        }
        out.append(contentsOf: "\n}".utf8)
        return Data(out)
    }

    /// Appends `text` as a JSON string literal. Byte by byte: only ASCII bytes are escaped, and
    /// UTF-8 never uses those inside a multi-byte character.
    static func appendQuoted(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            // Runs of bytes that need no escape are copied whole: byte-by-byte appends were most
            // of the cost of encoding a fetch's metadata.
            var runStart = 0
            for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
                case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
                case UInt8(ascii: "\n"): out.append(contentsOf: "\\n".utf8)
                case UInt8(ascii: "\r"): out.append(contentsOf: "\\r".utf8)
                case UInt8(ascii: "\t"): out.append(contentsOf: "\\t".utf8)
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: "\\u00".utf8)
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0xF)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `text` as a JSON string literal.
    static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        appendQuoted(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `2026-11-21T11:49:28.123Z`: ISO 8601 in UTC without a formatter's cost, at the nearest
    /// millisecond (a formatter truncates, writing x.999 s stored as a Double as .998).
    static func isoText(_ date: Date) -> String {
        var text = DigitText(capacity: 24)
        text.appendUTC(secondsSince1970: date.timeIntervalSince1970, separator: "T")
        text.append("Z")
        return text.text
    }

    /// Reads metadata written by `encoded()`.
    public static func decode(_ data: Data) throws -> SnapshotMetadata {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = isoDate(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                        debugDescription: "\(text) is not a time as fetchd writes it (2026-11-21T08:30:12.345Z)"))
            }
            return date
        }
        return try decoder.decode(SnapshotMetadata.self, from: data)
    }

    /// Reads `isoText`'s shape, `2026-11-21T08:30:12.345Z` (the fraction optional, at most nine
    /// digits), in the calendar it is written in (`UTCTime`: `timegm` undoes `gmtime_r`), so a time read and
    /// written again is the same text. Not Foundation's ISO-8601 style, which reads dates before
    /// 1582 in the Julian calendar and accepts text after the time. Nil for anything else.
    static func isoDate(_ text: String) -> Date? {
        UTCTime.secondsSince1970(reading: text, separator: "T", suffix: "Z").map(Date.init(timeIntervalSince1970:))
    }
}
