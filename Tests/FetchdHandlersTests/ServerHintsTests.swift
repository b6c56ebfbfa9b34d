import FetchdCore
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

    @Test func httpDatesInTheirThreeForms() {
        let expected = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        // RFC 850's two-digit year: more than 50 years ahead means the century before.
        #expect(HTTPDate.parse("Thursday, 19-Nov-26 00:00:00 GMT", now: now) == Date(timeIntervalSince1970: 1_795_046_400))
        #expect(HTTPDate.parse("Monday, 01-Jan-90 00:00:00 GMT", now: now) == Date(timeIntervalSince1970: 631_152_000))
    }

    @Test func notHTTPDates() {
        for text in ["", "soon", "Sun, 06 Nov 1994 08:49:37 CET", "Sun, 31 Nov 1994 08:49:37 GMT",
                     "Sun, 29 Feb 2023 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:49 GMT",
                     "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 006 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
                     "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov  6 08:49:37 94", "Sun, 06 Nov 1994 08:-1:37 GMT"] {
            #expect(HTTPDate.parse(text, now: now) == nil, "\(text)")
        }
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 23:59:60 GMT") == Date(timeIntervalSince1970: 1_709_251_199))
    }

    @Test func httpDatesWritten() {
        #expect(HTTPDate.text(Date(timeIntervalSince1970: 784_111_777.9)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.text(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        // Every day of a leap year reads back as itself.
        for day in 0..<366 {
            let date = Date(timeIntervalSince1970: 1_704_067_200 + Double(day) * 86_400 + 45_296)
            #expect(HTTPDate.parse(HTTPDate.text(date)) == date, "\(HTTPDate.text(date))")
        }
    }

    @Test func delaysAreCapped() {
        #expect(ServerHints.delaySeconds(status: 429, headers: ["retry-after": "99999999"], now: now)
            == ServerHints.maximumSeconds)
    }
}
