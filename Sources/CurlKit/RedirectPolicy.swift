#if canImport(Glibc)
import Glibc
#endif
import FetchdCore

/// Where a transfer may be redirected, checked twice for every connection: before its socket is
/// opened (libcurl's open-socket callback, given the address it is about to connect to), so a
/// refused address never sees even a SYN, and once connected, before the request is sent
/// (libcurl's pre-request callback), which also covers a reused connection, as no socket is
/// opened for one. Both ask the same rules.
///
/// A server must not use fetchd to reach what only fetchd's machine can reach, nor make a
/// secure fetch insecure:
/// - a redirect (or a name that resolves) to a loopback, unspecified, link-local, private,
///   shared (carrier-grade NAT) or unique-local address is refused unless the configured URL's
///   own host connected to an address of that same class. The address connected to is checked,
///   so a name that resolves differently the second time (DNS rebinding) gains nothing;
/// - an https URL is never redirected to http;
/// - custom headers (an API key, say) are not sent on once a redirect changes the scheme, host
///   or port; the conditional headers, which describe the content fetchd holds, are.
///
/// Private IPv4 networks and IPv6 unique-local addresses are one class, as are 127/8 and ::1,
/// and 169.254/16 and fe80::/10: a dual-stack host may be reached over either family from one
/// connection to the next. IPv4 addresses inside IPv6 ones (mapped, compatible, NAT64) count as
/// the IPv4 address.
///
/// With proxies (`proxy`, or fetchd's environment), a connection is through a proxy only when
/// its address **and** port are a proxy's (`ProxyRoute`); every other connection, the first
/// included, went direct (a `no_proxy` host, or a scheme with no proxy) and is held to exactly
/// the rules above. Through a proxy the connected address is the proxy's, so the host written
/// in the URL is checked instead (IP literals and `localhost`; the proxy resolves a name). A
/// global-only transfer goes further: a name the proxy would resolve is allowed only when fetchd
/// resolved it first, found every address global and pinned the proxy's tunnel to one of them
/// (`pinnedHosts`, `CurlEasy.pinThroughProxy`).
struct RedirectPolicy {
    /// What to do with a connection.
    enum Verdict: Equatable {
        case allow
        /// Allow it, without the custom headers from here on (another scheme, host or port).
        case allowWithoutCustomHeaders
        /// Refuse it; why, after "forbidden redirect: ".
        case refuse(String)
        /// Refuse the first connection (`globalOnly`); why, after "forbidden address: ".
        case refuseAddress(String)
    }

    /// The configured URL.
    let url: String
    /// The proxies that may make connections; empty without one.
    let proxies: ProxyRoute
    /// Whether every connection must reach a global address, the first one included.
    let globalOnly: Bool
    /// Host names (lower case) a global-only transfer may have a proxy connect to: fetchd
    /// resolved each, every address was global, and the tunnel is pinned to one of them.
    let pinnedHosts: Set<String>
    /// The class of what the configured URL's host reached, set by the first `check`: the
    /// connected address's when direct, the host's as written when through a proxy.
    private(set) var originClass: AddressClass?
    /// The configured URL's scheme (lower case), host and port, parsed at the first redirect: most
    /// fetches have none, and this runs for every fetch.
    private var origin: (scheme: String, host: String, port: String)?
    /// Whether the custom headers were dropped already.
    private(set) var headersDropped = false

    /// A policy for a transfer of `url`.
    init(url: String, proxies: ProxyRoute = .none, globalOnly: Bool = false, pinnedHosts: Set<String> = []) {
        self.url = url
        self.proxies = proxies
        self.globalOnly = globalOnly
        self.pinnedHosts = pinnedHosts
    }

    /// Checks a connection to `address` (numeric) and `port` made for `currentURL`, the URL the
    /// request is about to be sent for (only asked for after the first connection). A hop whose
    /// URL cannot be read is refused.
    mutating func check(connectedAddress address: String, port: Int, currentURL: () -> String?) -> Verdict {
        guard originClass != nil else {
            let (verdict, reached) = firstConnection(to: address, port: port)
            originClass = reached
            return verdict
        }
        let verdict = hop(to: address, port: port, currentURL: currentURL)
        guard verdict == .allowWithoutCustomHeaders else { return verdict }
        // Dropped once, for the rest of the fetch.
        if headersDropped { return .allow }
        headersDropped = true
        return verdict
    }

    /// What `check` will say of a connection to `address` (numeric) and `port`, asked before its
    /// socket is opened: a refusal here means nothing at all is sent to `address`. Records
    /// nothing (the connection, once made, is still given to `check`), and never asks to drop
    /// the headers.
    ///
    /// The kernel connects the unspecified address (0.0.0.0, ::) to the loopback, so it is
    /// checked, and named, as the loopback address the connection would reach.
    mutating func checkBeforeConnecting(to address: String, port: Int, currentURL: () -> String?) -> Verdict {
        let reached = Self.unspecifiedAsLoopback[address] ?? address
        let verdict = originClass == nil ? firstConnection(to: reached, port: port).verdict
            : hop(to: reached, port: port, currentURL: currentURL)
        return verdict == .allowWithoutCustomHeaders ? .allow : verdict
    }

    /// The loopback address that a connection to an unspecified one reaches on Linux.
    private static let unspecifiedAsLoopback = ["0.0.0.0": "127.0.0.1", "::": "::1", "::ffff:0.0.0.0": "::ffff:127.0.0.1"]

    /// The first connection's verdict, and the class the configured host reached: it is the
    /// configured URL's own, refused only for `globalOnly`.
    private func firstConnection(to address: String, port: Int) -> (verdict: Verdict, reached: AddressClass) {
        guard proxies.contains(address: address, port: port) else {
            let reached = AddressClass.of(address: address)
            guard !globalOnly || reached == .global else {
                return (.refuseAddress("\(address) is \(reached.withArticle) address; \(Self.globalOnlyRule)"), reached)
            }
            return (.allow, reached)
        }
        let host = CurlURL.parts(of: url)?.host ?? ""
        let reached = AddressClass.of(urlHost: host)
        if globalOnly, let problem = globalOnlyProblem(host: host, hostClass: reached) {
            return (.refuseAddress("the URL's host \(problem); \(Self.globalOnlyRule)"), reached)
        }
        return (.allow, reached)
    }

    /// What a global-only transfer is told of a refused connection.
    private static let globalOnlyRule = "this handler may reach only addresses on the Internet at large"

    /// Why a global-only transfer may not have a proxy connect to `host` (of `hostClass` as
    /// written), or nil when it may: an IP literal must be global, a name pinned.
    private func globalOnlyProblem(host: String, hostClass: AddressClass) -> String? {
        if hostClass != .global { return "is \(hostClass.withArticle) address" }
        if ProxyRoute.canonical(host.trimmingBrackets) != nil || pinnedHosts.contains(host) { return nil }
        return "\(host) is a name the proxy would resolve, which fetchd cannot check"
    }

    /// A later connection's verdict (a redirect, or the configured host again): refused, or
    /// allowed, without the custom headers when it is another origin (`check` drops them once).
    private mutating func hop(to address: String, port: Int, currentURL: () -> String?) -> Verdict {
        guard let originClass, let current = currentURL(), let parts = CurlURL.parts(of: current),
              let origin = origin ?? CurlURL.parts(of: url) else {
            return .refuse("the redirect's URL could not be read to check it")
        }
        self.origin = origin
        if origin.scheme == "https", parts.scheme == "http" {
            return .refuse("\(current) would drop from https to http")
        }
        if proxies.contains(address: address, port: port) {
            // The proxy connects on: what the URL names is what it reaches.
            let hostClass = AddressClass.of(urlHost: parts.host)
            if hostClass != .global, hostClass != originClass {
                return .refuse("\(current) names \(parts.host), \(hostClass.withArticle) address, "
                    + "and the configured URL's host is not one")
            }
            if globalOnly, let problem = globalOnlyProblem(host: parts.host, hostClass: hostClass) {
                return .refuse("\(current): through the proxy, \(problem)")
            }
        } else {
            // Direct: the address connected to is what is reached, whatever the URL names.
            let addressClass = AddressClass.of(address: address)
            if addressClass != .global, addressClass != originClass {
                return .refuse("\(current) leads to \(address), \(addressClass.withArticle) address, "
                    + "and the configured URL's host is not one")
            }
        }
        // Another origin (scheme, host or port) may be another server: the custom headers
        // (an API key, say) were meant for the configured one.
        if parts.host != origin.host || parts.scheme != origin.scheme || parts.port != origin.port {
            return .allowWithoutCustomHeaders
        }
        return .allow
    }
}

extension String {
    /// The text without the brackets of an IPv6 URL host.
    var trimmingBrackets: String {
        hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
    }
}
