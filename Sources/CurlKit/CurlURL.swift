import CCurlShim

/// libcurl's URL parser (`CURLU`), so a URL is split exactly as libcurl splits it when it
/// connects: a hand-written parser that disagreed with it on an odd URL would check one host and
/// let libcurl connect to another.
enum CurlURL {
    /// A URL's scheme and host, both lower case (an IPv6 host keeps its brackets), and its port:
    /// the scheme's default when none is written, or, without `defaultPort`, "" then. Nil when
    /// libcurl cannot parse it. Schemes libcurl does not fetch (a proxy's `socks5h`) are read too.
    static func parts(of url: String, defaultPort: Bool = true) -> (scheme: String, host: String, port: String)? {
        var scheme = [CChar](repeating: 0, count: 64)
        var host = [CChar](repeating: 0, count: 1024)
        var port = [CChar](repeating: 0, count: 16)
        // As libcurl parses a Location it follows: spaces allowed (it encodes them).
        let flags = UInt32(CURLU_ALLOW_SPACE) | UInt32(CURLU_NON_SUPPORT_SCHEME)
        guard fetchd_curl_url_parts(url, flags, defaultPort ? UInt32(CURLU_DEFAULT_PORT) : 0,
                                    &scheme, scheme.count, &host, host.count, &port, port.count) == CURLUE_OK
        else { return nil }
        return (string(scheme).lowercased(), string(host).lowercased(), string(port))
    }

    /// A NUL-terminated C buffer's text.
    static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
