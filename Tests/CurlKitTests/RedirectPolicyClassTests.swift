@testable import CurlKit
import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `RedirectPolicy`'s address classes and its decisions, address by address (the daemon-level
/// test, RedirectPolicyTests, connects to most of them for real in a network namespace).
struct RedirectPolicyClassTests {
    /// A proxy on the loopback, as a forward proxy on the same machine listens.
    static let loopbackProxy = ProxyRoute(endpoints: [.init(address: "127.0.0.1", port: 3128)], pins: [], unresolved: [])
    /// A proxy on a private address, as a company's listens.
    static let corpProxy = ProxyRoute(endpoints: [.init(address: "10.0.0.3", port: 3128)], pins: [], unresolved: [])

    @Test(arguments: [
        ("127.0.0.1", "loopback"), ("127.255.1.2", "loopback"), ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"), ("64:ff9b::7f00:1", "loopback"), ("::127.0.0.1", "loopback"),
        ("0.0.0.0", "unspecified"), ("0.1.2.3", "unspecified"), ("::", "unspecified"), ("not an address", "unspecified"),
        ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("fe80::1%lo", "link-local"), ("febf::1", "link-local"),
        ("10.0.0.1", "private"), ("172.16.0.1", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"),
        ("fc00::1", "private"), ("fd12:3456::1", "private"), ("::ffff:10.1.2.3", "private"),
        ("100.64.0.1", "shared (carrier-grade NAT)"), ("100.127.255.255", "shared (carrier-grade NAT)"),
        ("172.32.0.1", "global"), ("100.128.0.1", "global"), ("8.8.8.8", "global"), ("2a00:1450::1", "global"),
        ("192.0.0.8", "special-purpose"), ("192.0.2.1", "special-purpose"), ("198.18.0.1", "special-purpose"),
        ("198.19.255.255", "special-purpose"), ("198.51.100.7", "special-purpose"), ("203.0.113.7", "special-purpose"),
        ("192.88.99.1", "special-purpose"), ("240.0.0.1", "special-purpose"), ("255.255.255.255", "special-purpose"),
        ("224.0.0.1", "special-purpose"), ("198.20.0.1", "global"), ("192.0.3.1", "global"), ("203.0.114.1", "global"),
        ("64:ff9b:1::a00:1", "special-purpose"), ("100::1", "special-purpose"), ("2001::1", "special-purpose"),
        ("2001:1ff::1", "special-purpose"), ("2001:200::1", "global"), ("2001:db8::1", "special-purpose"),
        ("3fff::1", "special-purpose"), ("3fff:1000::1", "global"), ("5f00::1", "special-purpose"), ("ff02::1", "special-purpose"),
        ("::ffff:203.0.113.7", "special-purpose"),
        ("::ffff:8.8.8.8", "global"), ("192.169.0.1", "global"),
    ])
    func eachAddressHasItsClass(address: String, expected: String) {
        #expect(AddressClass.of(address: address).rawValue == expected, "\(address)")
    }

    @Test func urlHostsAreClassedAsWrittenBehindAProxy() {
        #expect(AddressClass.of(urlHost: "localhost") == .loopback)
        #expect(AddressClass.of(urlHost: "api.localhost") == .loopback)
        #expect(AddressClass.of(urlHost: "LocalHost.") == .loopback)
        #expect(AddressClass.of(urlHost: "[::1]") == .loopback)
        #expect(AddressClass.of(urlHost: "10.0.0.1") == .privateNetwork)
        #expect(AddressClass.of(urlHost: "example.org") == .global)
    }

    @Test func theFirstConnectionSetsTheClassLaterOnesAreChecked() {
        var policy = RedirectPolicy(url: "http://Example.org/feed")
        #expect(policy.check(connectedAddress: "93.184.216.34", port: 80) { nil } == .allow, "the first connection sets the class")
        #expect(policy.check(connectedAddress: "93.184.216.34", port: 80) { "http://example.org/next" } == .allow)
        #expect(policy.check(connectedAddress: "10.0.0.5", port: 80) { "http://intranet/x" }
                == .refuse("http://intranet/x leads to 10.0.0.5, a private address, and the configured URL's host is not one"))
        #expect(policy.check(connectedAddress: "93.184.216.35", port: 80) { "http://cdn.example.net/x" } == .allowWithoutCustomHeaders)
        #expect(policy.check(connectedAddress: "93.184.216.34", port: 80) { "http://example.org/back" } == .allow, "dropped once, for good")

        var local = RedirectPolicy(url: "https://127.0.0.1:8443/")
        #expect(local.check(connectedAddress: "127.0.0.1", port: 80) { nil } == .allow)
        #expect(local.check(connectedAddress: "::1", port: 80) { "https://[::1]:8443/x" } == .allowWithoutCustomHeaders)
        #expect(local.check(connectedAddress: "127.0.0.1", port: 80) { "http://127.0.0.1:8080/" }
                == .refuse("http://127.0.0.1:8080/ would drop from https to http"))

        var proxied = RedirectPolicy(url: "http://example.org/", proxies: Self.loopbackProxy)
        #expect(proxied.check(connectedAddress: "127.0.0.1", port: 3128) { nil } == .allow, "the proxy's own address is not the origin's")
        #expect(proxied.check(connectedAddress: "127.0.0.1", port: 3128) { "http://example.org/2" } == .allow)
        #expect(proxied.check(connectedAddress: "127.0.0.1", port: 3128) { "http://169.254.169.254/latest" }
                == .refuse("http://169.254.169.254/latest names 169.254.169.254, a link-local address, and the configured URL's host is not one"))
        // A hop that goes direct (no_proxy) shows its real address.
        #expect(proxied.check(connectedAddress: "10.0.0.5", port: 80) { "http://intranet/" }
                == .refuse("http://intranet/ leads to 10.0.0.5, a private address, and the configured URL's host is not one"))
        #expect(proxied.check(connectedAddress: "127.0.0.1", port: 3128) { nil } == .refuse("the redirect's URL could not be read to check it"))
    }

    /// The bypass: a proxy on an internal address, a public origin, and a redirect to a
    /// `no_proxy` host that goes direct to another internal address of the proxy's class.
    @Test func aHopPastTheProxyIsHeldToTheConfiguredHostsClass() {
        var policy = RedirectPolicy(url: "http://news.example/feed", proxies: Self.corpProxy)
        #expect(policy.check(connectedAddress: "10.0.0.3", port: 3128) { nil } == .allow, "the proxy")
        #expect(policy.check(connectedAddress: "10.0.0.3", port: 3128) { "http://news.example/next" } == .allow, "through the proxy")
        #expect(policy.check(connectedAddress: "10.9.8.7", port: 80) { "http://wiki.corp.example/secret" }
                == .refuse("http://wiki.corp.example/secret leads to 10.9.8.7, a private address, and the configured URL's host is not one"))
        #expect(policy.check(connectedAddress: "93.184.216.34", port: 80) { "https://cdn.example/x" } == .allowWithoutCustomHeaders,
                "a direct hop to a global address is fine")
        // An internal origin behind an internal proxy may still go to its own class directly.
        var inside = RedirectPolicy(url: "http://10.1.1.1/feed", proxies: Self.corpProxy)
        #expect(inside.check(connectedAddress: "10.0.0.3", port: 3128) { nil } == .allow)
        #expect(inside.check(connectedAddress: "10.1.1.2", port: 80) { "http://10.1.1.2/x" } == .allowWithoutCustomHeaders)
    }

    /// A proxy is known by its address and its port: a hop to another port of the proxy's
    /// address (a loopback-only service beside a proxy on 127.0.0.1) went direct, and is checked
    /// as a direct connection.
    @Test func aHopToTheProxysAddressOnAnotherPortIsDirect() {
        var policy = RedirectPolicy(url: "http://\(Self.remote)/feed", proxies: Self.loopbackProxy)
        #expect(policy.check(connectedAddress: "127.0.0.1", port: 3128) { nil } == .allow, "the proxy")
        #expect(policy.check(connectedAddress: "127.0.0.1", port: 8081) { "http://vm:8081/secret" }
                == .refuse("http://vm:8081/secret leads to 127.0.0.1, a loopback address, and the configured URL's host is not one"))
        #expect(policy.checkBeforeConnecting(to: "127.0.0.1", port: 8081) { "http://vm:8081/secret" }
                == .refuse("http://vm:8081/secret leads to 127.0.0.1, a loopback address, and the configured URL's host is not one"))
    }

    /// The first connection is checked like any other: a `no_proxy` host goes direct, so what it
    /// resolved to is what it reached (a global-only handler's name resolving to the loopback).
    @Test func aFirstConnectionPastTheProxyIsCheckedByItsAddress() {
        var globalOnly = RedirectPolicy(url: "http://vm:8081/secret", proxies: Self.loopbackProxy, globalOnly: true)
        #expect(globalOnly.checkBeforeConnecting(to: "127.0.0.1", port: 8081) { nil } == .refuseAddress(
            "127.0.0.1 is a loopback address; this handler may reach only addresses on the Internet at large"))
        #expect(globalOnly.check(connectedAddress: "127.0.0.1", port: 8081) { nil } == .refuseAddress(
            "127.0.0.1 is a loopback address; this handler may reach only addresses on the Internet at large"))
        // An administrator's handler may reach its own internal host directly; the class is then
        // that address's, not the URL's as written.
        var admin = RedirectPolicy(url: "http://vm:8081/feed", proxies: Self.loopbackProxy)
        #expect(admin.check(connectedAddress: "127.0.0.1", port: 8081) { nil } == .allow)
        #expect(admin.originClass == .loopback)
        #expect(admin.check(connectedAddress: "10.0.0.5", port: 80) { "http://intranet/" }
                == .refuse("http://intranet/ leads to 10.0.0.5, a private address, and the configured URL's host is not one"))
    }

    /// Through a proxy, a global-only handler's host name is one the proxy would resolve: allowed
    /// only when fetchd resolved and pinned it (`pinnedHosts`), on the first connection and on
    /// a redirect through the proxy alike; a global IP literal needs no pin.
    @Test func globalOnlyThroughAProxyNeedsItsNamesPinned() {
        let rule = "this handler may reach only addresses on the Internet at large"
        var unpinned = RedirectPolicy(url: "https://news.example/", proxies: Self.corpProxy, globalOnly: true)
        #expect(unpinned.checkBeforeConnecting(to: "10.0.0.3", port: 3128) { nil } == .refuseAddress(
            "the URL's host news.example is a name the proxy would resolve, which fetchd cannot check; \(rule)"))
        var pinned = RedirectPolicy(url: "https://news.example/", proxies: Self.corpProxy, globalOnly: true,
                                    pinnedHosts: ["news.example"])
        #expect(pinned.check(connectedAddress: "10.0.0.3", port: 3128) { nil } == .allow)
        #expect(pinned.check(connectedAddress: "10.0.0.3", port: 3128) { "https://news.example/2" } == .allow)
        #expect(pinned.checkBeforeConnecting(to: "10.0.0.3", port: 3128) { "https://vm.corp.example/secret" } == .refuse(
            "https://vm.corp.example/secret: through the proxy, vm.corp.example is a name the proxy would resolve, which fetchd cannot check"))
        #expect(pinned.check(connectedAddress: "10.0.0.3", port: 3128) { "https://\(Self.remote)/x" } == .allowWithoutCustomHeaders)
        var literal = RedirectPolicy(url: "http://\(Self.remote)/", proxies: Self.corpProxy, globalOnly: true)
        #expect(literal.check(connectedAddress: "10.0.0.3", port: 3128) { nil } == .allow)
    }

    /// A global address for the tests' "remote" server.
    static let remote = "93.184.216.34"

    /// A proxy named by its host name is resolved by fetchd and pinned there for libcurl; a
    /// proxy written without a port gets libcurl's default (1080; 443 for https).
    @Test func proxiesAreReadAsLibcurlReadsThem() {
        #expect(ProxyRoute.hostAndPort(ofProxy: "127.0.0.1:3128")! == ("127.0.0.1", 3128))
        #expect(ProxyRoute.hostAndPort(ofProxy: "http://user:pw@[::1]:8080/")! == ("::1", 8080))
        #expect(ProxyRoute.hostAndPort(ofProxy: "socks5h://Proxy.Example")! == ("proxy.example", 1080))
        #expect(ProxyRoute.hostAndPort(ofProxy: "https://proxy.example")! == ("proxy.example", 443))
        let named = ProxyRoute.route(through: ["http://localhost:3128"])
        #expect(named.contains(address: "127.0.0.1", port: 3128) || named.contains(address: "::1", port: 3128), "\(named)")
        #expect(!named.contains(address: "127.0.0.1", port: 3129))
        #expect(named.pins.count == 1 && named.pins[0].hasPrefix("localhost:3128:"), "\(named.pins)")
        let literal = ProxyRoute.route(through: ["http://[0:0::1]:3128"])
        #expect(literal.contains(address: "::1", port: 3128) && literal.pins.isEmpty, "\(literal)")
        #expect(ProxyRoute.of(proxy: "").isEmpty)
    }

    @Test func customHeadersAreDroppedForAnotherSchemeHostOrPort() {
        for (next, drops) in [("https://example.org/b", false), ("https://example.org:443/b", false),
                              ("https://example.org:8443/b", true), ("https://other.example.org/b", true)] {
            var policy = RedirectPolicy(url: "https://example.org/a")
            #expect(policy.check(connectedAddress: "93.184.216.34", port: 80) { nil } == .allow)
            #expect(policy.check(connectedAddress: "93.184.216.34", port: 80) { next } == (drops ? .allowWithoutCustomHeaders : .allow), "\(next)")
        }
        // http to https on the same host is another origin too (the downgrade is refused anyway).
        var upgrade = RedirectPolicy(url: "http://example.org/a")
        #expect(upgrade.check(connectedAddress: "93.184.216.34", port: 80) { nil } == .allow)
        #expect(upgrade.check(connectedAddress: "93.184.216.34", port: 80) { "https://example.org/a" } == .allowWithoutCustomHeaders)
    }

    @Test func globalOnlyRefusesTheFirstConnectionToAnythingElse() {
        var loopback = RedirectPolicy(url: "http://news.example/", globalOnly: true)
        #expect(loopback.check(connectedAddress: "127.0.0.1", port: 80) { nil } == .refuseAddress(
            "127.0.0.1 is a loopback address; this handler may reach only addresses on the Internet at large"))
        var global = RedirectPolicy(url: "http://news.example/", globalOnly: true)
        #expect(global.check(connectedAddress: "93.184.216.34", port: 80) { nil } == .allow)
        #expect(global.check(connectedAddress: "10.0.0.5", port: 80) { "http://intranet/" }
                == .refuse("http://intranet/ leads to 10.0.0.5, a private address, and the configured URL's host is not one"))
        // Behind a proxy the host as written decides; the proxy's own address does not.
        var proxied = RedirectPolicy(url: "http://169.254.169.254/latest", proxies: Self.corpProxy, globalOnly: true)
        #expect(proxied.check(connectedAddress: "10.0.0.3", port: 3128) { nil } == .refuseAddress(
            "the URL's host is a link-local address; this handler may reach only addresses on the Internet at large"))
    }

    /// Through libcurl: the refusal comes at the connection, before a request is sent, and the
    /// same request without the flag is fetched.
    @Test func aGlobalOnlyRequestToLoopbackFailsAtTheConnection() async throws {
        let www = try TemporaryDirectory("fetchd-global-only")
        try "local\n".write(toFile: www.file("x.txt"), atomically: true, encoding: .utf8)
        let server = try TestHTTPServer.files(in: www.path)
        defer { server.stop() }
        let client = HTTPClient(limits: .init(maxConnections: 1, maxHostConnections: 1))
        defer { client.shutdown() }
        var request = HTTPRequest(url: server.url("/x.txt"), outputPath: www.file("out"), userAgent: "test",
                                  timeoutMilliseconds: 10_000, maxBytes: 1000)
        request.globalAddressesOnly = true
        do {
            _ = try await client.fetch(request)
            Issue.record("a loopback server was fetched with globalAddressesOnly")
        } catch {
            #expect("\(error)".contains("forbidden address: 127.0.0.1 is a loopback address"), "\(error)")
        }
        #expect((try? String(contentsOfFile: www.file("out"), encoding: .utf8)) ?? "" == "", "nothing was written")
        request.globalAddressesOnly = false
        #expect(try await client.fetch(request).status == 200)
    }

    /// Before a socket is opened: the same rules, with nothing recorded, so the connection's own
    /// check still sets the class and drops the headers.
    @Test func theCheckBeforeConnectingAsksTheSameRulesAndRecordsNothing() {
        var policy = RedirectPolicy(url: "http://example.org/feed")
        #expect(policy.checkBeforeConnecting(to: "10.0.0.5", port: 80) { nil } == .allow, "the configured host may be anywhere")
        #expect(policy.originClass == nil)
        #expect(policy.check(connectedAddress: "93.184.216.34", port: 80) { nil } == .allow)
        #expect(policy.checkBeforeConnecting(to: "10.0.0.5", port: 80) { "http://intranet/x" }
                == .refuse("http://intranet/x leads to 10.0.0.5, a private address, and the configured URL's host is not one"))
        // The kernel connects the unspecified address to the loopback.
        #expect(policy.checkBeforeConnecting(to: "0.0.0.0", port: 80) { "http://0.0.0.0/x" }
                == .refuse("http://0.0.0.0/x leads to 127.0.0.1, a loopback address, and the configured URL's host is not one"))
        #expect(policy.checkBeforeConnecting(to: "::", port: 80) { "http://[::]/x" }
                == .refuse("http://[::]/x leads to ::1, a loopback address, and the configured URL's host is not one"))
        #expect(policy.checkBeforeConnecting(to: "93.184.216.35", port: 80) { "http://cdn.example.net/x" } == .allow)
        #expect(!policy.headersDropped, "dropping the headers is for the connection's own check")
        #expect(policy.check(connectedAddress: "93.184.216.35", port: 80) { "http://cdn.example.net/x" } == .allowWithoutCustomHeaders)
        #expect(policy.checkBeforeConnecting(to: "93.184.216.35", port: 80) { nil } == .refuse("the redirect's URL could not be read to check it"))

        var globalOnly = RedirectPolicy(url: "http://news.example/", globalOnly: true)
        #expect(globalOnly.checkBeforeConnecting(to: "127.0.0.1", port: 80) { nil } == .refuseAddress(
            "127.0.0.1 is a loopback address; this handler may reach only addresses on the Internet at large"))
        #expect(globalOnly.originClass == nil)
    }

    /// Behind a proxy the open-socket callback is asked for the proxy's address on a hop through
    /// it, and for the real one on a hop past it: each by that hop's rules.
    @Test func beforeConnectingAProxiedHopAndADirectOneKeepTheirRules() {
        var policy = RedirectPolicy(url: "http://news.example/feed", proxies: Self.corpProxy)
        #expect(policy.checkBeforeConnecting(to: "10.0.0.3", port: 3128) { nil } == .allow, "the proxy, for the configured URL")
        #expect(policy.check(connectedAddress: "10.0.0.3", port: 3128) { nil } == .allow)
        #expect(policy.checkBeforeConnecting(to: "10.0.0.3", port: 3128) { "http://news.example/next" } == .allow, "through the proxy")
        #expect(policy.checkBeforeConnecting(to: "10.9.8.7", port: 80) { "http://wiki.corp.example/secret" }
                == .refuse("http://wiki.corp.example/secret leads to 10.9.8.7, a private address, and the configured URL's host is not one"),
                "past the proxy")
        #expect(policy.checkBeforeConnecting(to: "10.0.0.3", port: 3128) { "http://169.254.169.254/latest" }
                == .refuse("http://169.254.169.254/latest names 169.254.169.254, a link-local address, and the configured URL's host is not one"))
        #expect(policy.checkBeforeConnecting(to: "93.184.216.34", port: 80) { "http://cdn.example/x" } == .allow, "past the proxy to a global address")
    }

    /// Through libcurl: a refused address is never connected to. The server is a listening
    /// socket nobody accepts on, whose accept queue would hold any connection the kernel completed.
    @Test func aRefusedAddressIsNeverConnectedTo() async throws {
        let trap = try ListeningTrap()
        let www = try TemporaryDirectory("fetchd-refused-unconnected")
        let client = HTTPClient(limits: .init(maxConnections: 1, maxHostConnections: 1))
        defer { client.shutdown() }
        var request = HTTPRequest(url: "http://127.0.0.1:\(trap.port)/x", outputPath: www.file("out"), userAgent: "test",
                                  timeoutMilliseconds: 3000, maxBytes: 1000)
        request.globalAddressesOnly = true
        do {
            _ = try await client.fetch(request)
            Issue.record("a loopback address was fetched with globalAddressesOnly")
        } catch {
            #expect("\(error)" == "forbidden address: 127.0.0.1 is a loopback address; "
                    + "this handler may reach only addresses on the Internet at large", "\(error)")
        }
        #expect(trap.connectionsWaiting() == 0, "the refused address saw a connection")
    }
}

/// A TCP socket listening on 127.0.0.1 (a free port) that nobody accepts on: the kernel completes
/// a handshake for it on its own, so any connection made to it waits in its accept queue.
private final class ListeningTrap {
    /// The listening socket, non-blocking.
    let fd: Int32
    /// The port it is bound to.
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            let error = errno
            close(fd)
            throw POSIXError(.init(rawValue: error) ?? .EIO)
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }

    /// Accepts (and closes) every connection that waits; returns how many did.
    func connectionsWaiting() -> Int {
        var count = 0
        while case let connection = accept(fd, nil, nil), connection >= 0 {
            close(connection)
            count += 1
        }
        return count
    }
}
