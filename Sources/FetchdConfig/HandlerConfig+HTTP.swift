import Foundation

extension HandlerConfig {
    /// Reads the http-only options, rejecting header names and values that would let a config
    /// line smuggle another header (CR/LF) or that HTTP does not allow.
    mutating func readHTTPOptions(_ reader: inout TableReader) {
        if let headers = reader.stringTable("headers") {
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                if name.isEmpty || !name.unicodeScalars.allSatisfy(HTTPFieldText.isTokenCharacter) {
                    reader.report("headers", "\"\(name)\" is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)")
                } else if value.unicodeScalars.contains(where: HTTPFieldText.isControlCharacter) {
                    reader.report("headers", "the value of \"\(name)\" contains a line break, NUL or other control character")
                } else if ["if-none-match", "if-modified-since"].contains(name.lowercased()) {
                    reader.report("headers", "\"\(name)\" is managed by fetchd (conditional requests); remove it")
                } else {
                    self.headers[name] = value
                }
            }
        }
        if let honor = reader.bool("honor_server_hints") { honorServerHints = honor }
        userAgent = HTTPFieldText.singleLine(&reader, "user_agent")
        acceptEncoding = HTTPFieldText.singleLine(&reader, "accept_encoding")
        proxy = HTTPFieldText.singleLine(&reader, "proxy")
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
}
