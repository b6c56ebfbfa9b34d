import FetchdConfig
import FetchdCore
import Testing

/// How a push token's entropy is estimated: the characters it holds times the bits of the
/// smallest alphabet holding them, and patterns no random generator makes refused at any length.
struct PushTokenStrengthTests {
    @Test func theAlphabetIsJudgedFromTheCharactersUsed() {
        let cases: [(String, PushTokenStrength.Alphabet, Int)] = [
            ("1234567890123456789012345678901234567890", .decimal, 40),
            ("279343f2ac8aea7d21000d347980970a", .hexadecimal, 32),
            ("279343F2AC8AEA7D21000D347980970A", .hexadecimal, 32),
            ("f753bcac-1bfe-8784-4563-4dc63efa5fc4", .hexadecimal, 32),  // a UUID's dashes carry nothing
            ("S0L7LbO9iHnXg9+AfkZATg==", .base64, 22),                  // nor does base64's padding
            ("S0L7LbO9iHnXg9-AfkZATg", .base64, 22),
            ("S0L7LbO9iHnXg9!AfkZATg", .visibleASCII, 22),
        ]
        for (token, alphabet, characters) in cases {
            let strength = PushTokenStrength(token)
            #expect(strength.alphabet == alphabet && strength.characters == characters, "\(token): \(strength)")
        }
    }

    /// The shortest tokens accepted: 32 hexadecimal digits, 22 base64 characters, 20 others, 39
    /// decimal digits; one character fewer is refused.
    @Test func atLeast128BitsAreNeeded() {
        let hex = "279343f2ac8aea7d21000d347980970a", base64 = "S0L7LbO9iHnXg9+AfkZATg", ascii = "S0L7!bO9iHnXg9+AfkZA"
        let decimal = "271828182845904523536028747135266249775"
        for token in [hex, base64, ascii, decimal] {
            #expect(PushTokenStrength(token).weakness == nil, "\(token): \(PushTokenStrength(token).bits) bits")
            let shorter = PushTokenStrength(String(token.dropLast()))
            #expect(shorter.weakness?.contains("fewer than the \(Defaults.pushTokenMinBits) needed") == true,
                    "\(token.dropLast()): \(shorter.bits) bits")
        }
        #expect(PushTokenStrength("0123456789abcdef").weakness == "16 hexadecimal digits carry about 64 bits (4 each), fewer than the 128 needed")
    }

    @Test func runsAndFewDistinctCharactersAreRefusedAtAnyLength() {
        let run = PushTokenStrength("279343f2ac8aea7d" + String(repeating: "0", count: 8) + "21000d347980970a")
        #expect(run.weakness == "it repeats one character 8 times in a row")
        #expect(PushTokenStrength("279343f2ac8aea7d" + String(repeating: "0", count: 7) + "21000d347980970a").weakness == nil)
        #expect(PushTokenStrength(String(repeating: "5e", count: 40)).weakness == "it holds only 2 different character(s)")
        #expect(PushTokenStrength(String(repeating: "abc123x", count: 10)).weakness == "it holds only 7 different character(s)")
        #expect(PushTokenStrength("").weakness == "the file holds no token")
    }
}
