import CCurlShim
import FetchdCore

extension CurlEasy {
    /// Sets up how `request` goes through proxies, and returns the redirect policy that checks
    /// its connections. Without a proxy, only the policy.
    ///
    /// With one: named proxies are pinned to the addresses fetchd resolved (`CURLOPT_RESOLVE`),
    /// so `ProxyRoute` knows every endpoint libcurl may connect to for a proxy. A global-only
    /// transfer (`HTTPRequest.globalAddressesOnly`) must also not let a proxy resolve its host:
    /// fetchd resolves the configured host itself, refuses it unless every address is global,
    /// and tunnels through the proxy (`CONNECT`, for http too) to the first of them
    /// (`CURLOPT_CONNECT_TO`), TLS still checked against the host's name. A redirect through the
    /// proxy to another name is refused by the policy, before the proxy is asked to connect.
    func routeThroughProxies(_ request: HTTPRequest) throws(HTTPFailure) -> RedirectPolicy {
        let route = ProxyRoute.of(proxy: request.proxy)
        guard !route.isEmpty else { return RedirectPolicy(url: request.url, globalOnly: request.globalAddressesOnly) }
        var pinned: Set<String> = []
        var setup: [CURLcode] = []
        for pin in route.pins { proxyResolveList = curl_slist_append(proxyResolveList, pin) }
        if proxyResolveList != nil {
            setup.append(fetchd_curl_setopt_pointer(handle, CURLOPT_RESOLVE, UnsafeMutableRawPointer(proxyResolveList)))
        }
        if request.globalAddressesOnly {
            if let pin = try Self.checkedPin(of: request.url) {
                pinned.insert(pin.host)
                connectToList = curl_slist_append(connectToList, pin.connectTo)
                setup.append(fetchd_curl_setopt_pointer(handle, CURLOPT_CONNECT_TO, UnsafeMutableRawPointer(connectToList)))
            }
            setup.append(fetchd_curl_setopt_long(handle, CURLOPT_HTTPPROXYTUNNEL, 1))
        }
        if let bad = setup.first(where: { $0 != CURLE_OK }) {
            throw .other(code: Int(bad.rawValue), message: String(cString: curl_easy_strerror(bad)))
        }
        return RedirectPolicy(url: request.url, proxies: route, globalOnly: request.globalAddressesOnly, pinnedHosts: pinned)
    }

    /// For a global-only transfer through a proxy: the configured URL's host name (lower case)
    /// and the `CURLOPT_CONNECT_TO` entry that sends any port of it to its first address, once
    /// every address it resolves to is global. Nil for an IP literal, which the policy checks as
    /// written; a failure for a name that does not resolve or reaches a non-global address.
    static func checkedPin(of url: String) throws(HTTPFailure) -> (host: String, connectTo: String)? {
        guard let host = CurlURL.parts(of: url)?.host, ProxyRoute.canonical(host.trimmingBrackets) == nil else { return nil }
        let addresses = ProxyNames.shared.addresses(of: host)
        guard let first = addresses.first else {
            throw .dns("\(host) could not be resolved; a handler that may reach only the Internet at large is "
                + "resolved by fetchd before a proxy connects to it, so its host must resolve on this machine")
        }
        if let refused = addresses.first(where: { AddressClass.of(address: $0) != .global }) {
            throw .forbiddenAddress("\(host) resolves to \(refused), \(AddressClass.of(address: refused).withArticle) address; "
                + "this handler may reach only addresses on the Internet at large")
        }
        return (host, "\(host)::\(first.contains(":") ? "[\(first)]" : first):")
    }
}
