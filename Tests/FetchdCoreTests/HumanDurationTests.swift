import FetchdCore
import Testing

/// Parsing and formatting the duration strings of config files.
@Suite("HumanDuration")
struct HumanDurationTests {
    /// Accepted strings and their value in seconds.
    static let accepted: [(text: String, seconds: Double)] = [
        ("500ms", 0.5), ("30s", 30), ("15m", 900), ("2h", 7200), ("1d", 86_400), ("1h30m", 5400),
        ("1w", 604_800), ("1.5s", 1.5), ("1h 30m", 5400), ("  45s\n", 45), ("2H", 7200),
        ("1d2h3m4s", 93_784), ("0s", 0), ("5s\r\n", 5), ("\r\n5s", 5), ("5MS", 0.005), (".5s", 0.5),
    ]

    /// Each accepted string parses to its number of seconds.
    @Test(arguments: accepted)
    func parses(text: String, seconds: Double) throws {
        #expect(try HumanDuration.parseSeconds(text) == seconds)
    }

    /// Strings without a unit, without a number, with an unknown unit or a sign are rejected,
    /// and so are digits and letters outside ASCII (an Arabic-Indic or full-width digit, a long
    /// s, a combining accent); the error quotes the text and shows valid examples.
    @Test(arguments: ["", "   ", "10", "abc", "5 parsecs", "-5s", "+5s", "s", "5s3", "1..5s", "5 s", "1y", "1h\t30m",
                      "\u{663}s", "\u{FF15}s", "5\u{17F}", "5s\u{301}", "5\u{212A}"])
    func rejects(text: String) {
        let error = #expect(throws: HumanDuration.ParseError.self) { try HumanDuration.parseSeconds(text) }
        #expect(error?.text == text)
        #expect(error?.description.contains("\"\(text)\" is not a duration") == true)
        #expect(error?.description.contains("\"1h30m\"") == true)
    }

    /// Formatting uses the largest units, compactly.
    @Test(arguments: [
        (0.25, "250ms"), (0.5, "500ms"), (1, "1s"), (45, "45s"), (60, "1m"), (900, "15m"), (3600, "1h"),
        (5400, "1h30m"), (7500, "2h5m"), (86_400, "1d"), (93_784, "1d2h3m4s"), (0, "0s"),
    ] as [(Double, String)])
    func formats(seconds: Double, text: String) {
        #expect(HumanDuration.format(seconds: seconds) == text)
    }

    /// Formatting then parsing gives back the same number of seconds, for whole seconds and
    /// for sub-second values in whole milliseconds.
    @Test(arguments: [0.001, 0.1, 0.25, 0.999, 1, 59, 61, 3599, 3601, 86_399, 86_401, 90_061, 1_209_600] as [Double])
    func formatRoundTrips(seconds: Double) throws {
        #expect(try HumanDuration.parseSeconds(HumanDuration.format(seconds: seconds)) == seconds)
    }

    /// Parsing then formatting a canonical string gives back the same string.
    @Test(arguments: ["500ms", "30s", "15m", "2h", "1d", "1h30m", "1d2h3m4s"])
    func parseRoundTrips(text: String) throws {
        #expect(HumanDuration.format(seconds: try HumanDuration.parseSeconds(text)) == text)
    }
}
