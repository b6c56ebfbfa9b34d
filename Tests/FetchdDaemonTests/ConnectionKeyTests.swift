@testable import FetchdDaemon
import Foundation
import Testing

/// The per-host cap's key, read from the URL's text, against Foundation's URL parser (which
/// computed it before and is the reference for what a host and a port are).
struct ConnectionKeyTests {
    @Test(arguments: [
        "http://127.0.0.1:8080/a", "https://Example.ORG/path?q=1", "http://example.org", "HTTPS://example.org:8443",
        "http://user:secret@host.example:81/x", "http://[::1]:9000/feed", "https://[2001:db8::1]/", "http://h/a@b",
        "http://example.org?x=1:2", "http://example.org#frag:3", "http://example.org:/empty-port",
        "http://example.org:080/leading-zero",
    ])
    func matchesFoundationsParser(url: String) throws {
        let components = try #require(URLComponents(string: url))
        let host = try #require(components.host).lowercased()
        let port = components.port ?? (components.scheme?.lowercased() == "https" ? 443 : 80)
        #expect(ConnectionKey.of(url) == "\(host):\(port)")  // an IPv6 host keeps its brackets in both
    }

    @Test func aURLWithoutHostHasNoKey() {
        #expect(ConnectionKey.of("file:///etc/os-release") == "")
        #expect(ConnectionKey.of("not a url") == "")
    }
}
