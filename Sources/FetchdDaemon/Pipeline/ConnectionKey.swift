/// The `host:port` an http(s) URL connects to, which is what the per-host transfer cap counts.
///
/// Read straight from the URL's text rather than with Foundation's `URLComponents`: a wake asks
/// twice per due handler (to interleave hosts, then for the slot), and `URLComponents` was a
/// visible share of a wake's CPU. Only grouping depends on it; libcurl parses the URL for real.
/// Unlike `URLComponents` it does not percent-decode the host (`ex%61mple.org` is its own key).
enum ConnectionKey {
    /// `example.org:443` for `https://user@Example.org/x`; `[::1]:8080` for `http://[::1]:8080/`;
    /// "" when the URL has no `scheme://host` part.
    static func of(_ url: String) -> String {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) else { return "" }
        let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        var authority = bytes[(colon + 3)...]
        if let end = authority.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            authority = authority[..<end]
        }
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        // The port's colon is the last one after any `]` (an IPv6 literal has colons of its own).
        let hostEnd = authority.lastIndex(of: UInt8(ascii: "]")) ?? authority.startIndex
        var host = authority
        var port = scheme == "https" ? "443" : "80"
        if let portColon = authority[hostEnd...].lastIndex(of: UInt8(ascii: ":")) {
            host = authority[..<portColon]
            // As a number, so `:080` and `:80` are one key; no number: the scheme's port.
            if let number = Int(String(decoding: authority[(portColon + 1)...], as: UTF8.self)) { port = String(number) }
        }
        guard !host.isEmpty else { return "" }
        return String(decoding: host, as: UTF8.self).lowercased() + ":" + port
    }
}
