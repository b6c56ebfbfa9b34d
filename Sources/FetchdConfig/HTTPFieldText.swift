import FetchdCore

/// What a config value sent in an HTTP request may hold: header names are tokens, and no value
/// may carry a line break or NUL that would end its line early or smuggle another header.
enum HTTPFieldText {
    /// A string option sent on the wire (a header value, a proxy URL): refused when it holds a
    /// control character, which could end a header line early or cut the value at a NUL, or
    /// when it is longer than a header value may be (`tooLong`).
    static func singleLine(_ reader: inout TableReader, _ key: String) -> String? {
        guard let value = reader.string(key) else { return nil }
        guard !value.unicodeScalars.contains(where: isControlCharacter) else {
            reader.report(key, "contains a line break, NUL or other control character; expected one line of text")
            return nil
        }
        if let problem = tooLong(value) {
            reader.report(key, problem)
            return nil
        }
        return value
    }

    /// Why `value` is too long to send in a header (`Defaults.httpFieldMaxBytes`), nil when it is not.
    static func tooLong(_ value: String) -> String? {
        let bytes = value.utf8.count
        guard bytes > Defaults.httpFieldMaxBytes else { return nil }
        return "is \(bytes) bytes long; at most \(Defaults.httpFieldMaxBytes) (servers refuse longer header lines)"
    }

    /// Controls other than a tab (which HTTP allows inside a field value). Scalars, not
    /// Characters: "\r\n" is one Character and equals neither.
    static func isControlCharacter(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t") || scalar.value == 0x7f
    }

    /// The characters of an HTTP token (a header name), RFC 9110 section 5.6.2.
    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
    }
}
