import CCurlShim
import FetchdCore

/// A URL checked by libcurl's own URL parser (`curl_url`, through the shim CurlKit uses too),
/// with the flags the fetch uses, so that the check and every fetch agree: a URL libcurl cannot
/// parse (a space in it, a bad port) is reported at load time instead of failing every fetch
/// with curl error 3.
enum URLSyntax {
    /// Why libcurl cannot use `url`, nil when it can.
    static func problem(with url: String) -> String? {
        let code = fetchd_curl_url_parts(url, 0, 0, nil, 0, nil, 0, nil, 0)
        guard code != CURLUE_OK else { return nil }
        let reason = curl_url_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
        return "libcurl cannot parse \"\(url)\": \(reason.prefix(1).lowercased() + reason.dropFirst())"
            + " (write a space as %20, other reserved characters percent-encoded)"
    }

    /// Why `url`'s host, as written, is not on the Internet at large (a loopback, private,
    /// link-local, shared or unspecified IP literal, or `localhost`); nil when it may be. A URL
    /// libcurl cannot parse is `problem(with:)`'s to report.
    static func nonGlobalHost(in url: String) -> String? {
        var host = [CChar](repeating: 0, count: 1024)
        let code = fetchd_curl_url_parts(url, 0, 0, nil, 0, &host, host.count, nil, 0)
        guard code == CURLUE_OK else { return code == CURLUE_NO_HOST ? "the URL names no host" : nil }
        let name = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let addressClass = AddressClass.of(urlHost: name)
        return addressClass == .global ? nil : "\(name) is \(addressClass.withArticle) address"
    }
}
