@testable import FetchdSnapshots
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

    @Test func datesAreWrittenAsFoundationWritesThemToTheMillisecond() throws {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        var random = SystemRandomNumberGenerator()
        let instants = [0, 1, 999, 1_795_163_412_345, -1, -1001, 253_402_300_799_999]
            + (0..<500).map { _ in Int64.random(in: 0...4_102_444_800_000, using: &random) }
        for milliseconds in instants {
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            // Foundation truncates, and x.999 s as a Double is a hair under it, so it can write
            // .998; fetchd writes the nearest millisecond. Nudged into the millisecond, the two agree.
            #expect(SnapshotMetadata.isoText(date) == style.format(date.addingTimeInterval(0.0004)), "\(milliseconds)")
            // And what fetchd writes reads back as the same millisecond.
            let parsed = try style.parse(SnapshotMetadata.isoText(date))
            #expect(Int64((parsed.timeIntervalSince1970 * 1000).rounded()) == milliseconds)
        }
    }

    /// fetchd reads its own times back exactly, and any time it reads it writes back the same.
    @Test func timesReadBackAsTheyWereWritten() throws {
        // Spread evenly over years 1019 to 2099, with odd milliseconds (the same every run).
        let spread = stride(from: Int64(-30_000_000_000_000), through: 4_102_444_800_000, by: 68_204_889_601)
        for milliseconds in [0, -1, -62_135_596_800_000, 253_402_300_799_999] + Array(spread) {
            let text = SnapshotMetadata.isoText(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
            let date = try #require(SnapshotMetadata.isoDate(text), "\(text)")
            #expect(Int64((date.timeIntervalSince1970 * 1000).rounded()) == milliseconds, "\(text)")
            #expect(SnapshotMetadata.isoText(date) == text)
        }
        // Before 1582 too (Foundation's style read those in the Julian calendar).
        let old = try #require(SnapshotMetadata.isoDate("1013-11-21T11:49:32.5Z"))
        #expect(SnapshotMetadata.isoText(old) == "1013-11-21T11:49:32.500Z")
    }

    @Test(arguments: ["1013-11-21T11:49:32Z218.", "2026-11-31T00:00:00Z", "2026-11-21 11:49:32Z", "2026-11-21T11:49:32",
                      "2026-11-21T24:00:00Z", "2026-11-21T11:49:32.Z", "+2026-11-21T11:49:32Z", "2026-11-21T11:49:32.1234567890Z"])
    func otherTextIsNoTime(_ text: String) {
        #expect(SnapshotMetadata.isoDate(text) == nil)
    }
}
