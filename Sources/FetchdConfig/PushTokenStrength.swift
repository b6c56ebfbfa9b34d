import FetchdCore
import Foundation

/// How hard a push token is to guess, judged from the token alone (fetchd cannot know how it was
/// made, only what it looks like): its entropy is estimated as the characters it holds times the
/// bits one character carries in the smallest usual alphabet holding all of them, so
/// `openssl rand -hex 16` (32 hexadecimal digits, 4 bits each) is 128 bits. Length alone would
/// pass a padded word, so a long run of one character, or only a handful of distinct ones, is
/// refused whatever the length: a random generator makes such a token but rarely.
public struct PushTokenStrength: Sendable, Equatable {
    /// The alphabets a token is judged to be drawn from, smallest first.
    public enum Alphabet: String, Sendable, CaseIterable {
        /// `0-9`.
        case decimal = "decimal digits"
        /// `0-9 a-f` (either case); `-` and `:` between groups carry nothing.
        case hexadecimal = "hexadecimal digits"
        /// `A-Z a-z 0-9 + /` or `- _` (base64url); `=` padding at the end carries nothing.
        case base64 = "base64 characters"
        /// Any of the 94 visible ASCII characters.
        case visibleASCII = "visible ASCII characters"

        /// The bits one character drawn uniformly from the alphabet carries, and as the message
        /// shows them.
        public var bitsText: String {
            switch self {
            case .decimal: "3.3"
            case .hexadecimal: "4"
            case .base64: "6"
            case .visibleASCII: "6.55"
            }
        }

        /// The bits one character drawn uniformly from the alphabet carries.
        public var bitsPerCharacter: Double {
            switch self {
            case .decimal: log2(10)
            case .hexadecimal: 4
            case .base64: 6
            case .visibleASCII: log2(94)
            }
        }

        /// Fewer distinct characters than this in a token of the alphabet mean it was not drawn
        /// at random: for a token just long enough, by chance less than once in a million.
        var leastDistinct: Int { self == .decimal ? 5 : 8 }
    }

    /// The longest run of one character a random token has but rarely (below one in a million
    /// for 64 hexadecimal digits); one that long says the token was typed or padded.
    public static let longestRun = 7

    /// The alphabet the token's characters come from.
    public let alphabet: Alphabet
    /// The characters that carry entropy (separators and padding left out).
    public let characters: Int
    /// The longest run of one character.
    public let run: Int
    /// How many different characters it holds.
    public let distinct: Int

    /// Judges `token` (already trimmed).
    public init(_ token: String) {
        let decimalDigits = Set("0123456789")
        let hexDigits = Set("0123456789abcdefABCDEF")
        let base64 = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
        let ungrouped = token.filter { $0 != "-" && $0 != ":" }
        let unpadded = token.hasSuffix("==") ? token.dropLast(2) : token.hasSuffix("=") ? token.dropLast() : Substring(token)
        let counted: Substring
        if !ungrouped.isEmpty, ungrouped.allSatisfy({ decimalDigits.contains($0) }) {
            alphabet = .decimal
            counted = Substring(ungrouped)
        } else if !ungrouped.isEmpty, ungrouped.allSatisfy({ hexDigits.contains($0) }) {
            alphabet = .hexadecimal
            counted = Substring(ungrouped)
        } else if unpadded.allSatisfy({ base64.contains($0) }) {
            alphabet = .base64
            counted = unpadded
        } else {
            alphabet = .visibleASCII
            counted = Substring(token)
        }
        characters = counted.count
        distinct = Set(counted).count
        var longest = 0, current = 0
        var previous: Character?
        for character in counted {
            current = character == previous ? current + 1 : 1
            longest = max(longest, current)
            previous = character
        }
        run = longest
    }

    /// The estimated entropy, in bits: characters × bits per character.
    public var bits: Double { Double(characters) * alphabet.bitsPerCharacter }

    /// Nil when the token is strong enough (`Defaults.pushTokenMinBits`); else what is wrong,
    /// for a message.
    public var weakness: String? {
        if characters == 0 { return "the file holds no token" }
        if run > Self.longestRun { return "it repeats one character \(run) times in a row" }
        if distinct < alphabet.leastDistinct { return "it holds only \(distinct) different character(s)" }
        guard bits >= Double(Defaults.pushTokenMinBits) else {
            return "\(characters) \(alphabet.rawValue) carry about \(Int(bits)) bits (\(alphabet.bitsText) each), "
                + "fewer than the \(Defaults.pushTokenMinBits) needed"
        }
        return nil
    }
}
