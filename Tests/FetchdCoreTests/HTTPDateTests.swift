import FetchdCore
import Foundation
import Testing

/// HTTP dates, read in their three forms and written as IMF-fixdates.
struct HTTPDateTests {
    static let now = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18 11:06:40 UTC

    @Test func httpDatesInTheirThreeForms() {
        let expected = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: Self.now) == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        // RFC 850's two-digit year: more than 50 years ahead means the century before.
        #expect(HTTPDate.parse("Thursday, 19-Nov-26 00:00:00 GMT", now: Self.now) == Date(timeIntervalSince1970: 1_795_046_400))
        #expect(HTTPDate.parse("Monday, 01-Jan-90 00:00:00 GMT", now: Self.now) == Date(timeIntervalSince1970: 631_152_000))
    }

    @Test func notHTTPDates() {
        for text in ["", "soon", "Sun, 06 Nov 1994 08:49:37 CET", "Sun, 31 Nov 1994 08:49:37 GMT",
                     "Sun, 29 Feb 2023 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:49 GMT",
                     "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 006 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
                     "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov  6 08:49:37 94", "Sun, 06 Nov 1994 08:-1:37 GMT"] {
            #expect(HTTPDate.parse(text, now: Self.now) == nil, "\(text)")
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

    @Test func twoDigitYearsAreAtMostFiftyYearsAhead() {
        let in2080 = Date(timeIntervalSince1970: 3_471_292_800)  // 2080-01-01 00:00:00 UTC
        #expect(HTTPDate.parse("Monday, 01-Jan-20 00:00:00 GMT", now: in2080) == Date(timeIntervalSince1970: 4_733_510_400),
                "in 2080, 20 is 2120 (40 years ahead), not 2020")
        #expect(HTTPDate.parse("Wednesday, 01-Jan-76 00:00:00 GMT", now: Self.now) == Date(timeIntervalSince1970: 3_345_062_400),
                "in 2026, 76 is 2076: exactly 50 years ahead is not more than 50")
        #expect(HTTPDate.parse("Saturday, 01-Jan-77 00:00:00 GMT", now: Self.now) == Date(timeIntervalSince1970: 220_924_800),
                "in 2026, 77 is 1977")
    }

    @Test func lenientWhereItCostsNothingStrictWhereItMovesTheDate() {
        let expected = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 UTC") == expected, "UTC is taken for GMT")
        #expect(HTTPDate.parse("Mon, 06 Nov 1994 08:49:37 GMT") == expected, "the weekday is not checked")
        #expect(HTTPDate.parse("Sun,  06 Nov 1994 08:49:37 GMT") == expected, "a doubled space is skipped")
        for signed in ["Sun, +6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov +994 08:49:37 GMT", "Sun, 06 Nov 1994 +8:49:37 GMT",
                       "Sun, 06 Nov 1994 8:49:37 GMT", "Sunday, 06-Nov-+4 08:49:37 GMT"] {
            #expect(HTTPDate.parse(signed) == nil, "\(signed)")
        }
    }
}
