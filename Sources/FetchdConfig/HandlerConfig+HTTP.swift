import Foundation

extension HandlerConfig {
    /// Reads the http-only options, rejecting header names and values that would let a config
    /// line smuggle another header (CR/LF) or that HTTP does not allow.
    mutating func readHTTPOptions(_ reader: inout TableReader) {
        if let headers = reader.stringTable("headers") {
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                if name.isEmpty || !name.unicodeScalars.allSatisfy(Self.isTokenCharacter) {
                    reader.report("headers", "\"\(name)\" is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)")
                } else if value.unicodeScalars.contains(where: Self.isControlCharacter) {
                    reader.report("headers", "the value of \"\(name)\" contains a line break, NUL or other control character")
                } else if ["if-none-match", "if-modified-since"].contains(name.lowercased()) {
                    reader.report("headers", "\"\(name)\" is managed by fetchd (conditional requests); remove it")
                } else {
                    self.headers[name] = value
                }
            }
        }
        if let honor = reader.bool("honor_server_hints") { honorServerHints = honor }
        userAgent = Self.singleLine(&reader, "user_agent")
        acceptEncoding = Self.singleLine(&reader, "accept_encoding")
        proxy = Self.singleLine(&reader, "proxy")
        if let proxy, proxy.unicodeScalars.contains(" ") {
            reader.report("proxy", "\"\(proxy)\" contains a space; expected a URL such as http://proxy.example:3128")
            self.proxy = nil
        }
        if let caFile = reader.string("ca_file") {
            if FileManager.default.isReadableFile(atPath: caFile) {
                self.caFile = caFile
            } else {
                reader.report("ca_file", "\"\(caFile)\" does not exist or cannot be read; expected a PEM file of CA certificates")
            }
        }
    }

    /// A string option sent on the wire (a header value, a proxy URL): refused when it holds a
    /// control character, which could end a header line early or cut the value at a NUL.
    private static func singleLine(_ reader: inout TableReader, _ key: String) -> String? {
        guard let value = reader.string(key) else { return nil }
        guard !value.unicodeScalars.contains(where: isControlCharacter) else {
            reader.report(key, "contains a line break, NUL or other control character; expected one line of text")
            return nil
        }
        return value
    }

    /// Controls other than a tab (which HTTP allows inside a field value). Scalars, not
    /// Characters: "\r\n" is one Character and equals neither.
    private static func isControlCharacter(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t") || scalar.value == 0x7f
    }

    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
    }
}
