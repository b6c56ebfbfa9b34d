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
/// the IPv4 address. With a proxy (configured, or from the environment), the proxy makes the
/// connections, so the connected address is the proxy's; the hosts written in the URLs (IP
/// literals and `localhost`) are checked as well, and names are for the proxy's own rules.
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
    /// Whether a proxy may make the connections (a `proxy`, or one from the environment).
    let viaProxy: Bool
    /// The class of the first connection's address, the configured URL's own; set by the first
    /// `check`. Behind a proxy, the proxy's.
    private(set) var originClass: AddressClass?
    /// Behind a proxy: the class of the configured URL's host as written.
    private var originHostClass: AddressClass?
    /// Behind a proxy: the proxy's address, the first connection's. A later hop connected
    /// elsewhere went direct (`no_proxy`).
    private var proxyAddress: String?
    /// The configured URL's scheme (lower case), host and port, parsed at the first redirect: most
    /// fetches have none, and this runs for every fetch.
    private var origin: (scheme: String, host: String, port: String)?
    /// Whether the custom headers were dropped already.
    private(set) var headersDropped = false
    /// Whether every connection must reach a global address, the first one included.
    let globalOnly: Bool

    /// A policy for a transfer of `url`.
    init(url: String, viaProxy: Bool, globalOnly: Bool = false) {
        self.url = url
        self.viaProxy = viaProxy
        self.globalOnly = globalOnly
    }

    /// Checks a connection to `address` (numeric) made for `currentURL`, the URL the request
    /// is about to be sent for (only asked for after the first connection).
    ///
    /// The connected address is always checked: behind a proxy it is the proxy's, the same for
    /// every hop, unless a hop goes direct (`no_proxy`), and then it is the real one, held to the
    /// configured host's class as written (a proxy reached at several addresses therefore has
    /// hops to its other addresses refused when they are internal). Behind a proxy the host
    /// written in the URL is checked too. A hop whose URL cannot be read is refused.
    mutating func check(connectedAddress address: String, currentURL: () -> String?) -> Verdict {
        guard originClass != nil else {
            originClass = AddressClass.of(address: address)
            if viaProxy { proxyAddress = address }
            return firstConnection(to: address)
        }
        let verdict = hop(to: address, currentURL: currentURL)
        guard verdict == .allowWithoutCustomHeaders else { return verdict }
        // Dropped once, for the rest of the fetch.
        if headersDropped { return .allow }
        headersDropped = true
        return verdict
    }

    /// What `check` will say of a connection to `address` (numeric), asked before its socket is
    /// opened: a refusal here means nothing at all is sent to `address`. Records nothing (the
    /// connection, once made, is still given to `check`), and never asks to drop the headers.
    ///
    /// The kernel connects the unspecified address (0.0.0.0, ::) to the loopback, so it is
    /// checked, and named, as the loopback address the connection would reach.
    mutating func checkBeforeConnecting(to address: String, currentURL: () -> String?) -> Verdict {
        let reached = Self.unspecifiedAsLoopback[address] ?? address
        let verdict = originClass == nil ? firstConnection(to: reached) : hop(to: reached, currentURL: currentURL)
        return verdict == .allowWithoutCustomHeaders ? .allow : verdict
    }

    /// The loopback address that a connection to an unspecified one reaches on Linux.
    private static let unspecifiedAsLoopback = ["0.0.0.0": "127.0.0.1", "::": "::1", "::ffff:0.0.0.0": "::ffff:127.0.0.1"]

    /// The first connection's verdict: it is the configured URL's own, refused only for
    /// `globalOnly`, and then by the host as written when behind a proxy (the connected address
    /// is the proxy's), by `address` otherwise.
    private mutating func firstConnection(to address: String) -> Verdict {
        if viaProxy, originHostClass == nil {
            originHostClass = CurlURL.parts(of: url).map { AddressClass.of(urlHost: $0.host) } ?? .global
        }
        let reached = viaProxy ? originHostClass ?? .global : AddressClass.of(address: address)
        if globalOnly, reached != .global {
            return .refuseAddress("\(viaProxy ? "the URL's host" : address) is \(reached.withArticle) address; "
                + "this handler may reach only addresses on the Internet at large")
        }
        return .allow
    }

    /// A later connection's verdict (a redirect, or the configured host again): refused, or
    /// allowed, without the custom headers when it is another origin (`check` drops them once).
    private mutating func hop(to address: String, currentURL: () -> String?) -> Verdict {
        guard let originClass, let current = currentURL(), let parts = CurlURL.parts(of: current),
              let origin = origin ?? CurlURL.parts(of: url) else {
            return .refuse("the redirect's URL could not be read to check it")
        }
        self.origin = origin
        if origin.scheme == "https", parts.scheme == "http" {
            return .refuse("\(current) would drop from https to http")
        }
        // A hop that went direct past the proxy (`no_proxy`) is held to the configured host's own
        // class: the proxy's (an internal address, often) says nothing of what the origin may reach.
        let addressClass = AddressClass.of(address: address)
        let wentDirect = viaProxy && address != proxyAddress
        let allowedClass = wentDirect ? originHostClass ?? .global : originClass
        if addressClass != .global, addressClass != allowedClass {
            return .refuse("\(current) leads to \(address), \(addressClass.withArticle) address, "
                + "and the configured URL's host is not one")
        }
        if viaProxy, case let hostClass = AddressClass.of(urlHost: parts.host), hostClass != .global, hostClass != originHostClass {
            return .refuse("\(current) names \(parts.host), \(hostClass.withArticle) address, "
                + "and the configured URL's host is not one")
        }
        // Another origin (scheme, host or port) may be another server: the custom headers
        // (an API key, say) were meant for the configured one.
        if parts.host != origin.host || parts.scheme != origin.scheme || parts.port != origin.port {
            return .allowWithoutCustomHeaders
        }
        return .allow
    }

    /// Whether libcurl takes a proxy from the environment for requests without `proxy` (the
    /// variables it reads; `http_proxy` only in lower case, as libcurl does). Read once: the
    /// environment is fetchd's own and does not change while it runs.
    static let environmentHasProxy: Bool =
        ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].contains {
            guard let value = getenv($0) else { return false }
            return value.pointee != 0
        }
}
