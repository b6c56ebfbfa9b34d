/// Lower-case hexadecimal text of bytes (digests in metadata, logs and config).
public enum HexText {
    /// Two lower-case hex digits per byte. (String(format:) per byte was a measurable share of a
    /// snapshot commit.)
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        lowercase(Array(bytes))
    }

    /// `lowercase` of an array (a digest as libcurl's driver hands it over). Concrete, not
    /// generic: called across modules, a generic body walked the bytes through protocol witnesses.
    public static func lowercase(_ bytes: [UInt8]) -> String {
        // Written straight into the string's storage: appending to an array that grew as it went
        // (six reallocations for a SHA-256) and copying it into a String was most of the cost.
        String(unsafeUninitializedCapacity: 2 * bytes.count) { text in
            var index = 0
            for byte in bytes {
                text[index] = digit(byte >> 4)
                text[index + 1] = digit(byte & 0x0f)
                index += 2
            }
            return index
        }
    }

    private static func digit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
