import NIOCore

extension PushSourceLimits {
    /// A client, as the push listener counts it: an IPv4 address, an IPv6 /64 (the block one
    /// host usually holds, so a client that rotates addresses inside it is still one source), or
    /// loopback as a whole. Any local user may send from any loopback address (127.0.0.0/8, ::1,
    /// ::ffff:127.0.0.0/104) without asking anyone, so counting those one by one would give each
    /// local user as many sources as it cares to use.
    struct Source: Hashable, Sendable, CustomStringConvertible {
        private enum Key: Hashable, Sendable {
            /// Every loopback address, whatever its family.
            case loopback
            /// An IPv4 address (an IPv4-mapped IPv6 address included): its 4 bytes.
            case ipv4([UInt8])
            /// An IPv6 address's /64: its first 8 bytes.
            case ipv6([UInt8])
        }

        private let key: Key

        /// The source of a peer address; nil for a UNIX socket.
        init?(_ address: SocketAddress?) {
            guard let bytes = PushSourceLimits.addressBytes(address) else { return nil }
            if bytes.count == 4 {
                key = bytes[0] == 127 ? .loopback : .ipv4(bytes)
            } else {
                key = bytes == [UInt8](repeating: 0, count: 15) + [1] ? .loopback : .ipv6(Array(bytes[0..<8]))
            }
        }

        /// `192.0.2.1`, `2001:db8:1:2::/64` or `loopback (127.0.0.0/8, ::1)`.
        var description: String {
            switch key {
            case .loopback:
                return "loopback (127.0.0.0/8, ::1)"
            case .ipv4(let bytes):
                return bytes.map(String.init).joined(separator: ".")
            case .ipv6(let bytes):
                let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                return groups.joined(separator: ":") + "::/64"
            }
        }
    }

    /// A peer's whole address: 4 bytes for IPv4 (an IPv4-mapped IPv6 address included, so the
    /// two spellings of one client are one), 16 for IPv6; nil for a UNIX socket.
    static func addressBytes(_ address: SocketAddress?) -> [UInt8]? {
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            let all = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
            return Array(all[0..<12]) == mapped ? Array(all[12..<16]) : all
        default:
            return nil
        }
    }
}
