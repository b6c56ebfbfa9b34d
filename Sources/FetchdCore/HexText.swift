/// Lower-case hexadecimal text of bytes (digests in metadata, logs and config).
public enum HexText {
    /// Two lower-case hex digits per byte. (String(format:) per byte was a measurable share of a
    /// snapshot commit.)
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
