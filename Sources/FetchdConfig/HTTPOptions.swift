import Foundation

/// The request of a handler that speaks HTTP: an `http` handler's fetch, or a `transfer`'s
/// download (`TransferOptions.request`).
public struct HTTPOptions: Sendable, Equatable {
    /// The URL fetched.
    public var url: String
    /// Extra request headers.
    public var headers: [String: String] = [:]
    /// The User-Agent; nil means `fetchd/VERSION`.
    public var userAgent: String?
    /// The Accept-Encoding offered; nil offers every encoding libcurl decodes (http only:
    /// transfers resume by byte ranges and ask for no content coding).
    public var acceptEncoding: String?
    /// A proxy; nil leaves libcurl's environment handling in place.
    public var proxy: String?
    /// A PEM file of CA certificates trusted instead of the system's.
    public var caFile: String?
    /// Whether `file://` URLs may be read (local use and tests only; http only).
    public var allowFileURLs = false
    /// Whether the schedule honours the server's Retry-After, Cache-Control max-age and Expires.
    public var honorServerHints = true
    /// Whether every connection must go to a global address: set for handlers an unprivileged
    /// application registered over D-Bus, never by a key (`Registration`).
    public var globalAddressesOnly = false

    /// A request of `url`, every other option at its default.
    public init(url: String) {
        self.url = url
    }

    /// Reads the keys of an HTTP request from a `[[handler]]` table of `kind` (http or
    /// transfer), rejecting header names and values that would let a config line smuggle
    /// another header (CR/LF) or that HTTP does not allow. Nil when there is no usable `url`
    /// (the problem is in `reader`).
    static func read(from reader: inout TableReader, kind: HandlerConfig.Kind) -> HTTPOptions? {
        let allowFileURLs = kind == .http ? reader.bool("allow_file_urls") ?? false : false
        let url = readURL(&reader, kind: kind, allowFileURLs: allowFileURLs)
        var options = HTTPOptions(url: url ?? "")
        options.allowFileURLs = allowFileURLs
        if let headers = reader.stringTable("headers") {
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                if name.isEmpty || !name.unicodeScalars.allSatisfy(HTTPFieldText.isTokenCharacter) {
                    reader.report("headers", "\"\(name)\" is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)")
                } else if value.unicodeScalars.contains(where: HTTPFieldText.isControlCharacter) {
                    reader.report("headers", "the value of \"\(name)\" contains a line break, NUL or other control character")
                } else if let problem = HTTPFieldText.tooLong(name + value) {
                    reader.report("headers", "\"\(name)\" with its value \(problem)")
                } else if ["if-none-match", "if-modified-since"].contains(name.lowercased()) {
                    reader.report("headers", "\"\(name)\" is managed by fetchd (conditional requests); remove it")
                } else {
                    options.headers[name] = value
                }
            }
        }
        if let honor = reader.bool("honor_server_hints") { options.honorServerHints = honor }
        options.userAgent = HTTPFieldText.singleLine(&reader, "user_agent")
        if kind == .http { options.acceptEncoding = HTTPFieldText.singleLine(&reader, "accept_encoding") }
        options.proxy = HTTPFieldText.singleLine(&reader, "proxy")
        if let proxy = options.proxy, proxy.unicodeScalars.contains(" ") {
            reader.report("proxy", "\"\(proxy)\" contains a space; expected a URL such as http://proxy.example:3128")
            options.proxy = nil
        }
        if let caFile = reader.path("ca_file") {
            if FileManager.default.isReadableFile(atPath: caFile) {
                options.caFile = caFile
            } else {
                reader.report("ca_file", "\"\(caFile)\" does not exist or cannot be read; expected a PEM file of CA certificates")
            }
        }
        return url == nil ? nil : options
    }

    /// The `url` key: required, http:// or https://, or file:// for an http handler that allows it.
    private static func readURL(_ reader: inout TableReader, kind: HandlerConfig.Kind, allowFileURLs: Bool) -> String? {
        guard let url = reader.string("url") else {
            if reader.table["url"] == nil { reader.report(nil, "a\(kind == .http ? "n" : "") \(kind.rawValue) handler needs a \"url\" key") }
            return nil
        }
        let lower = url.lowercased()
        if kind == .http, lower.hasPrefix("file://") {
            if allowFileURLs, let problem = URLSyntax.problem(with: url) {
                reader.report("url", problem)
                return nil
            }
            if allowFileURLs { return url }
            reader.report("url", "file:// URLs are refused unless the handler sets allow_file_urls = true")
            return nil
        }
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            reader.report("url", "\"\(url)\" is not an http:// or https:// URL")
            return nil
        }
        if let problem = URLSyntax.problem(with: url) {
            reader.report("url", problem)
            return nil
        }
        return url
    }
}
