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

    /// The JSON written to disk: sorted keys and ISO-8601 dates, so files diff cleanly.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Self.dateFormatter().string(from: date))
        }
        return try encoder.encode(self)
    }

    /// Reads metadata written by `encoded()`.
    public static func decode(_ data: Data) throws -> SnapshotMetadata {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = dateFormatter().date(from: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                        debugDescription: "\(text) is not an ISO-8601 time"))
            }
            return date
        }
        return try decoder.decode(SnapshotMetadata.self, from: data)
    }

    /// ISO-8601 with milliseconds: `2026-11-21T08:30:12.345Z`.
    private static func dateFormatter() -> ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}
