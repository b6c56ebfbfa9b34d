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
        var fields: [(String, String)] = [("bytes", String(bytes))]
        if let contentType { fields.append(("content_type", Self.quoted(contentType))) }
        let detailLines = details.sorted { $0.key < $1.key }
            .map { "    \(Self.quoted($0.key)) : \(Self.quoted($0.value))" }
        fields.append(("details", detailLines.isEmpty ? "{ }" : "{\n" + detailLines.joined(separator: ",\n") + "\n  }"))
        fields += [
            ("duration_ms", String(durationMilliseconds)),
            ("fetched_at", Self.quoted(Self.dateStyle.format(fetchedAt))),
            ("handler", Self.quoted(handler)),
            ("result", Self.quoted(result)),
            ("sha256", Self.quoted(sha256)),
            ("trigger", Self.quoted(trigger)),
            ("version", Self.quoted(version)),
        ]
        let body = fields.map { "  \"\($0.0)\" : \($0.1)" }.joined(separator: ",\n")
        return Data(("{\n" + body + "\n}").utf8)
    }

    /// `text` as a JSON string literal.
    static func quoted(_ text: String) -> String {
        // Most values (digests, names, numbers, URLs) need no escaping at all.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + text + "\""
        }
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Reads metadata written by `encoded()`.
    public static func decode(_ data: Data) throws -> SnapshotMetadata {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = try? dateStyle.parse(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                        debugDescription: "\(text) is not an ISO-8601 time"))
            }
            return date
        }
        return try decoder.decode(SnapshotMetadata.self, from: data)
    }

    /// ISO-8601 with milliseconds: `2026-11-21T08:30:12.345Z`. The Swift format style, not
    /// `ISO8601DateFormatter`: that one goes through ICU and cost more than the fetch itself.
    private static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}
