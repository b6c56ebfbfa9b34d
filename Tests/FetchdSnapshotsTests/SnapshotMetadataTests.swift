import FetchdSnapshots
import Foundation
import Testing

/// meta.json is written by hand (for speed); it must stay valid JSON that reads back exactly.
struct SnapshotMetadataTests {
    private func roundTrip(_ metadata: SnapshotMetadata) throws -> SnapshotMetadata {
        let data = try metadata.encoded()
        // Any JSON parser accepts it, not only ours.
        #expect(try JSONSerialization.jsonObject(with: data) is [String: Any])
        return try SnapshotMetadata.decode(data)
    }

    @Test func awkwardStringsSurviveTheRoundTrip() throws {
        let metadata = SnapshotMetadata(
            handler: "news", version: "00000042-20261121T083012Z",
            fetchedAt: Date(timeIntervalSince1970: 1_795_163_412.345), durationMilliseconds: 31, bytes: 148,
            sha256: "abc", contentType: "text/plain; charset=\"utf-8\"", trigger: "push",
            details: ["quote\"and\\back": "line\nbreak\ttab\r\u{01}\u{1f}", "unicode": "Grüße 🚀", "empty": "",
                      "url": "https://example.com/a?b=c&d=e"])
        let decoded = try roundTrip(metadata)
        #expect(decoded == metadata)
    }

    @Test func noContentTypeAndNoDetails() throws {
        let metadata = SnapshotMetadata(handler: "h", fetchedAt: Date(timeIntervalSince1970: 0), durationMilliseconds: 0,
                                        trigger: "timer")
        #expect(try roundTrip(metadata) == metadata)
        let text = String(decoding: try metadata.encoded(), as: UTF8.self)
        #expect(text.contains("\"fetched_at\" : \"1970-01-01T00:00:00.000Z\""), "\(text)")
        #expect(!text.contains("content_type"))
    }
}
