import CCurlShim

/// libcurl's URL parser (`CURLU`), so a URL is split exactly as libcurl splits it when it
/// connects: a hand-written parser that disagreed with it on an odd URL would check one host and
/// let libcurl connect to another.
enum CurlURL {
    /// A URL's scheme and host, both lower case (an IPv6 host keeps its brackets), or nil when
    /// libcurl cannot parse it.
    static func parts(of url: String) -> (scheme: String, host: String)? {
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        // As libcurl parses a Location it follows: spaces allowed (it encodes them).
        guard curl_url_set(handle, CURLUPART_URL, url, UInt32(CURLU_ALLOW_SPACE)) == CURLUE_OK,
              let scheme = part(CURLUPART_SCHEME, of: handle), let host = part(CURLUPART_HOST, of: handle) else { return nil }
        return (scheme.lowercased(), host.lowercased())
    }

    private static func part(_ which: CURLUPart, of handle: OpaquePointer) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, which, &value, 0) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }
}
