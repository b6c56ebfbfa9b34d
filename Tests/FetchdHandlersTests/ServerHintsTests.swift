import FetchdHandlers
import Foundation
import Testing

/// How long servers ask to be left alone.
struct ServerHintsTests {
    let now = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18 11:06:40 UTC

    @Test func retryAfterInSecondsAndAsADate() {
        #expect(ServerHints.delaySeconds(status: 429, headers: ["retry-after": "120"], now: now) == 120)
        let date = "Wed, 18 Nov 2026 11:16:40 GMT"  // ten minutes after `now`
        #expect(ServerHints.delaySeconds(status: 503, headers: ["retry-after": date], now: now) == 600)
        #expect(ServerHints.delaySeconds(status: 500, headers: ["retry-after": "120"], now: now) == nil)
        #expect(ServerHints.delaySeconds(status: 429, headers: ["retry-after": "soon"], now: now) == nil)
    }

    @Test func freshnessFromMaxAgeOrExpires() {
        #expect(ServerHints.delaySeconds(status: 200, headers: ["cache-control": "public, max-age=300"], now: now) == 300)
        #expect(ServerHints.delaySeconds(status: 304, headers: ["cache-control": "max-age=60"], now: now) == 60)
        #expect(ServerHints.delaySeconds(status: 200, headers: ["expires": "Wed, 18 Nov 2026 12:06:40 GMT"], now: now) == 3600)
        // max-age wins over Expires; no-cache means no floor; past dates mean none.
        #expect(ServerHints.delaySeconds(status: 200, headers: [
            "cache-control": "max-age=10", "expires": "Wed, 18 Nov 2026 12:06:40 GMT"], now: now) == 10)
        #expect(ServerHints.delaySeconds(status: 200, headers: ["cache-control": "no-cache, max-age=300"], now: now) == nil)
        #expect(ServerHints.delaySeconds(status: 200, headers: ["expires": "Wed, 18 Nov 2026 10:06:40 GMT"], now: now) == nil)
    }

    @Test func delaysAreCapped() {
        #expect(ServerHints.delaySeconds(status: 429, headers: ["retry-after": "99999999"], now: now)
            == ServerHints.maximumSeconds)
    }
}
