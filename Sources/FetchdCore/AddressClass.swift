#if canImport(Glibc)
import Glibc
#endif

/// What an IP address is, for the rules that keep fetchd from reaching what only its machine
/// can reach: the redirect policy (checked on every connection) and registrations over D-Bus
/// (checked on the URL, then on every connection). Private IPv4 networks and IPv6 unique-local
/// addresses are one class, as are 127/8 and ::1, and 169.254/16 and fe80::/10; IPv4 addresses
/// inside IPv6 ones (mapped, compatible, NAT64) count as the IPv4 address.
public enum AddressClass: String, Equatable, Sendable {
    /// 127/8, ::1; `localhost` as written in a URL.
    case loopback
    /// 0.0.0.0/8, ::; and text that is no address at all.
    case unspecified
    /// 169.254/16, fe80::/10.
    case linkLocal = "link-local"
    /// 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10.
    case privateNetwork = "private"
    /// 100.64/10.
    case shared = "shared (carrier-grade NAT)"
    /// The other ranges the IANA special-purpose registries mark not globally reachable, and
    /// multicast: 192.0.0/24, the documentation ranges (192.0.2/24, 198.51.100/24,
    /// 203.0.113/24, 2001:db8::/32, 3fff::/20), benchmarking (198.18/15), the 6to4 relay
    /// anycast (192.88.99/24), 240/4 and the broadcast address, 224/4, 64:ff9b:1::/48,
    /// 100::/64, 2001::/23, 5f00::/16 and ff00::/8. No server on the Internet at large is there.
    case specialPurpose = "special-purpose"
    /// Anything else: reachable from the Internet at large.
    case global

    /// "a loopback", "an unspecified", ... for messages.
    public var withArticle: String { (self == .unspecified ? "an " : "a ") + rawValue }

    /// The class of a URL's host as written: an IP literal's, loopback for `localhost`, and
    /// global for any other name (behind a proxy, fetchd never learns its address).
    public static func of(urlHost host: String) -> AddressClass {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let lower = bare.lowercased().hasSuffix(".") ? String(bare.lowercased().dropLast()) : bare.lowercased()
        if lower == "localhost" || lower.hasSuffix(".localhost") { return .loopback }
        return bytes(of: bare).map(of(bytes:)) ?? .global
    }

    /// The class of a numeric address (IPv6 zone ids ignored). Text that is no address at all is
    /// taken as unspecified: never a place a redirect may lead.
    public static func of(address text: String) -> AddressClass {
        bytes(of: text).map(of(bytes:)) ?? .unspecified
    }

    /// An IPv4 (4 bytes) or IPv6 (16 bytes) address's bytes, or nil when `text` is neither.
    private static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        let withoutZone = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
        guard inet_pton(AF_INET6, withoutZone, &v6) == 1 else { return nil }
        return withUnsafeBytes(of: &v6) { Array($0) }
    }

    private static func of(bytes: [UInt8]) -> AddressClass {
        bytes.count == 4 ? of(ipv4: bytes) : of(ipv6: bytes)
    }

    private static func of(ipv4 b: [UInt8]) -> AddressClass {
        switch (b[0], b[1]) {
        case (0, _): .unspecified
        case (127, _): .loopback
        case (10, _), (172, 16...31), (192, 168): .privateNetwork
        case (100, 64...127): .shared
        case (169, 254): .linkLocal
        case (192, 0) where b[2] == 0 || b[2] == 2, (192, 88) where b[2] == 99, (198, 18...19), (198, 51) where b[2] == 100,
             (203, 0) where b[2] == 113, (224...255, _):
            .specialPurpose
        default: .global
        }
    }

    /// The IPv6 special-purpose ranges that are not globally reachable (see `specialPurpose`).
    private static func isSpecialPurpose(ipv6 b: [UInt8]) -> Bool {
        let word0 = UInt16(b[0]) << 8 | UInt16(b[1]), word1 = UInt16(b[2]) << 8 | UInt16(b[3])
        let word2 = UInt16(b[4]) << 8 | UInt16(b[5])
        return b[0] == 0xff                                              // ff00::/8, multicast
            || (word0 == 0x0064 && word1 == 0xff9b && word2 == 0x0001)  // 64:ff9b:1::/48, local-use NAT64
            || (word0 == 0x0100 && b[2..<8].allSatisfy { $0 == 0 })      // 100::/64, discard-only
            || (word0 == 0x2001 && word1 < 0x0200)                       // 2001::/23, IETF protocol assignments
            || (word0 == 0x2001 && word1 == 0x0db8)                      // 2001:db8::/32, documentation
            || (word0 == 0x3fff && word1 < 0x1000)                       // 3fff::/20, documentation
            || word0 == 0x5f00                                           // 5f00::/16, SRv6 SIDs
    }

    private static func of(ipv6 b: [UInt8]) -> AddressClass {
        let firstTwelve = b[0..<12]
        if firstTwelve.allSatisfy({ $0 == 0 }) {
            // ::, ::1, and the deprecated IPv4-compatible ::a.b.c.d.
            if b[12..<16].allSatisfy({ $0 == 0 }) { return .unspecified }
            if b[12..<15].allSatisfy({ $0 == 0 }), b[15] == 1 { return .loopback }
            return of(ipv4: Array(b[12..<16]))
        }
        let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
        let nat64: [UInt8] = [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]
        if Array(firstTwelve) == mapped || Array(firstTwelve) == nat64 { return of(ipv4: Array(b[12..<16])) }
        if b[0] == 0xfe, b[1] & 0xc0 == 0x80 { return .linkLocal }       // fe80::/10
        if b[0] == 0xfe, b[1] & 0xc0 == 0xc0 { return .privateNetwork }  // fec0::/10, site-local (deprecated)
        if b[0] & 0xfe == 0xfc { return .privateNetwork }                // fc00::/7, unique local
        if isSpecialPurpose(ipv6: b) { return .specialPurpose }
        return .global
    }
}
