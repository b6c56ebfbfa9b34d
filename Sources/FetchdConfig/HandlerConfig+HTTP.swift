import Foundation

extension HandlerConfig {
    /// Reads the http-only options, rejecting header names and values that would let a config
    /// line smuggle another header (CR/LF) or that HTTP does not allow.
    mutating func readHTTPOptions(_ reader: inout TableReader) {
        if let headers = reader.stringTable("headers") {
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                if name.isEmpty || !name.unicodeScalars.allSatisfy(Self.isTokenCharacter) {
                    reader.report("headers", "\"\(name)\" is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)")
                } else if value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" }) {
                    // Scalars, not Characters: "\r\n" is one Character and equals neither.
                    reader.report("headers", "the value of \"\(name)\" contains a line break")
                } else if ["if-none-match", "if-modified-since"].contains(name.lowercased()) {
                    reader.report("headers", "\"\(name)\" is managed by fetchd (conditional requests); remove it")
                } else {
                    self.headers[name] = value
                }
            }
        }
        if let honor = reader.bool("honor_server_hints") { honorServerHints = honor }
        userAgent = reader.string("user_agent")
        acceptEncoding = reader.string("accept_encoding")
        proxy = reader.string("proxy")
        if let caFile = reader.string("ca_file") {
            if FileManager.default.isReadableFile(atPath: caFile) {
                self.caFile = caFile
            } else {
                reader.report("ca_file", "\"\(caFile)\" does not exist or cannot be read; expected a PEM file of CA certificates")
            }
        }
    }

    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
    }
}
