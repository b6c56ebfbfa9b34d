import CCurlShim
import FetchdCore

/// A URL checked by libcurl's own URL parser (`curl_url`), with the flags the fetch uses, so
/// that the check and every fetch agree: a URL libcurl cannot parse (a space in it, a bad port)
/// is reported at load time instead of failing every fetch with curl error 3.
enum URLSyntax {
    /// Why libcurl cannot use `url`, nil when it can.
    static func problem(with url: String) -> String? {
        guard let handle = curl_url() else { return "libcurl could not check the URL (out of memory)" }
        defer { curl_url_cleanup(handle) }
        let code = curl_url_set(handle, CURLUPART_URL, url, 0)
        guard code != CURLUE_OK else { return nil }
        let reason = curl_url_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
        return "libcurl cannot parse \"\(url)\": \(reason.prefix(1).lowercased() + reason.dropFirst())"
            + " (write a space as %20, other reserved characters percent-encoded)"
    }

    /// Why `url`'s host, as written, is not on the Internet at large (a loopback, private,
    /// link-local, shared or unspecified IP literal, or `localhost`); nil when it may be.
    static func nonGlobalHost(in url: String) -> String? {
        guard let handle = curl_url() else { return "libcurl could not check the URL (out of memory)" }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK else { return problem(with: url) }
        var host: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, CURLUPART_HOST, &host, 0) == CURLUE_OK, let host else { return "the URL names no host" }
        defer { curl_free(host) }
        let name = String(cString: host)
        let addressClass = AddressClass.of(urlHost: name)
        return addressClass == .global ? nil : "\(name) is \(addressClass.withArticle) address"
    }
}
