import CCurlShim
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The proxies one transfer may connect to, as the exact endpoints (numeric address and port)
/// libcurl will connect to for them: how `RedirectPolicy` tells a connection to a proxy from
/// one that went direct. A connection is through a proxy only when both its address and its
/// port are a proxy's; every other connection, the first included, went direct (`no_proxy`, or
/// a scheme with no proxy) and is checked as one.
///
/// A proxy named by a host name is resolved by fetchd, and libcurl is pinned to those same
/// addresses (`CURLOPT_RESOLVE`, `pins`), so the two can never disagree on where the proxy is.
struct ProxyRoute: Sendable, Equatable {
    /// One place a proxy listens.
    struct Endpoint: Hashable, Sendable {
        /// Numeric, as `inet_ntop` spells it (IPv6 without brackets).
        let address: String
        /// The TCP port.
        let port: Int
    }

    /// Every endpoint of every proxy the transfer may use; empty without a proxy.
    let endpoints: Set<Endpoint>
    /// `CURLOPT_RESOLVE` entries ("HOST:PORT:ADDRESS,..."), one per proxy named by a host name.
    let pins: [String]
    /// Proxies whose host name did not resolve (libcurl, pinned to nothing, fails to reach them).
    let unresolved: [String]

    /// No proxy at all.
    static let none = ProxyRoute(endpoints: [], pins: [], unresolved: [])

    /// Whether a proxy may make connections.
    var isEmpty: Bool { endpoints.isEmpty && unresolved.isEmpty }

    /// Whether a connection to `address` (numeric) and `port` is one to a proxy.
    func contains(address: String, port: Int) -> Bool {
        endpoints.contains(Endpoint(address: Self.canonical(address) ?? address, port: port))
    }

    /// The route of a request with `proxy` (`HTTPRequest.proxy`): that proxy; none for "";
    /// for nil, every proxy libcurl may take from fetchd's environment.
    static func of(proxy: String?) -> ProxyRoute {
        switch proxy {
        case .some(""): return .none
        case .some(let proxy): return route(through: [proxy])
        case .none: return environmentRoute
        }
    }

    /// The proxies of fetchd's environment. The environment is fetchd's own and does not change
    /// while it runs, so its proxies are parsed once; only a name's addresses are looked up
    /// again (`ProxyNames`), never more than once a minute.
    private static var environmentRoute: ProxyRoute {
        environmentEndpoints.isEmpty ? .none : route(through: environmentEndpoints)
    }

    /// `environmentProxies` parsed (nil for one that cannot be read).
    private static let environmentEndpoints: [(proxy: String, endpoint: (host: String, port: Int)?)] =
        environmentProxies.map { ($0, hostAndPort(ofProxy: $0)) }

    /// The proxy variables libcurl reads, in its order (`http_proxy` only in lower case, as
    /// libcurl does): each scheme's, then `all_proxy`. Any of them may serve some hop.
    static let environmentProxies: [String] =
        ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].compactMap { name in
            guard let value = getenv(name), value.pointee != 0 else { return nil }
            return String(cString: value)
        }

    /// The route through `proxies` (URLs as libcurl takes them: a scheme is optional).
    static func route(through proxies: [String]) -> ProxyRoute {
        route(through: proxies.map { ($0, hostAndPort(ofProxy: $0)) })
    }

    /// The route through proxies already parsed.
    private static func route(through proxies: [(proxy: String, endpoint: (host: String, port: Int)?)]) -> ProxyRoute {
        var endpoints = Set<Endpoint>()
        var pins: [String] = []
        var unresolved: [String] = []
        for (proxy, endpoint) in proxies {
            guard let (host, port) = endpoint else { unresolved.append(proxy); continue }
            if let literal = canonical(host) {
                endpoints.insert(Endpoint(address: literal, port: port))
                continue
            }
            let addresses = ProxyNames.shared.addresses(of: host)
            guard !addresses.isEmpty else { unresolved.append(proxy); continue }
            for address in addresses { endpoints.insert(Endpoint(address: address, port: port)) }
            pins.append("\(host):\(port):" + addresses.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ","))
        }
        return ProxyRoute(endpoints: endpoints, pins: pins, unresolved: unresolved)
    }

    /// A proxy URL's host (without brackets) and port, the port defaulted as libcurl does: 443
    /// for an https proxy, 1080 for any other.
    static func hostAndPort(ofProxy proxy: String) -> (host: String, port: Int)? {
        let url = proxy.contains("://") ? proxy : "http://" + proxy
        guard let parts = CurlURL.parts(of: url, defaultPort: false), !parts.host.isEmpty else { return nil }
        return (parts.host.trimmingBrackets, Int(parts.port) ?? (parts.scheme == "https" ? 443 : 1080))
    }

    /// `text` as `inet_ntop` spells the address it is, or nil when it is no IP address (IPv6
    /// zone ids dropped).
    static func canonical(_ text: String) -> String? {
        var v4 = in_addr()
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if inet_pton(AF_INET, text, &v4) == 1 {
            return inet_ntop(AF_INET, &v4, &buffer, socklen_t(buffer.count)).map { _ in CurlURL.string(buffer) }
        }
        var v6 = in6_addr()
        let bare = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
        guard inet_pton(AF_INET6, bare, &v6) == 1 else { return nil }
        return inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count)).map { _ in CurlURL.string(buffer) }
    }
}

/// Host names fetchd resolved itself (proxies', and the hosts a global-only transfer has a
/// proxy connect to), for `ProxyRoute` and `CurlEasy.pinThroughProxy`. A name is looked up
/// when first asked for, and again in the background once its answer is a minute old, the old
/// answer serving meanwhile: transfers are prepared on the driver thread, which must not wait
/// for DNS more than once per name.
final class ProxyNames: Sendable {
    /// The one cache of the process.
    static let shared = ProxyNames()

    /// How long an answer is used before it is looked up again.
    static let refreshSeconds = 60.0

    private struct Answer {
        var addresses: [String]
        var at: ContinuousClock.Instant
        var refreshing = false
    }

    private let answers = Mutex<[String: Answer]>([:])

    /// The numeric addresses of `host` (IPv4 and IPv6, as `inet_ntop` spells them); empty when
    /// it does not resolve.
    func addresses(of host: String) -> [String] {
        let now = ContinuousClock.now
        let known = answers.withLock { table -> Answer? in
            guard var answer = table[host] else { return nil }
            if now - answer.at > .seconds(Self.refreshSeconds), !answer.refreshing {
                answer.refreshing = true
                table[host] = answer
                DispatchQueue.global(qos: .utility).async { self.store(host, Self.lookUp(host)) }
            }
            return answer
        }
        if let known { return known.addresses }
        let addresses = Self.lookUp(host)
        store(host, addresses)
        return addresses
    }

    private func store(_ host: String, _ addresses: [String]) {
        answers.withLock { $0[host] = Answer(addresses: addresses, at: .now) }
    }

    /// getaddrinfo's addresses for `host`, for TCP, in its order, each once.
    static func lookUp(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var entry = list
        while let info = entry?.pointee {
            defer { entry = info.ai_next }
            guard let address = info.ai_addr else { continue }
            let text: String?
            switch Int32(info.ai_family) {
            case AF_INET:
                text = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    var bytes = v4.pointee.sin_addr
                    return inet_ntop(AF_INET, &bytes, &buffer, socklen_t(buffer.count)).map { _ in CurlURL.string(buffer) }
                }
            case AF_INET6:
                text = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    var bytes = v6.pointee.sin6_addr
                    return inet_ntop(AF_INET6, &bytes, &buffer, socklen_t(buffer.count)).map { _ in CurlURL.string(buffer) }
                }
            default:
                text = nil
            }
            if let text, !addresses.contains(text) { addresses.append(text) }
        }
        return addresses
    }
}
