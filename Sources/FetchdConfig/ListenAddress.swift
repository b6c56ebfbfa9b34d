import Foundation

/// An IP address and TCP port to listen on, as written in `push_listen`: `127.0.0.1:8617` or
/// `[::1]:8617`. Only IP literals: a host name would make start-up depend on name resolution.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// The IP address, without brackets.
    public var host: String
    /// The TCP port; 0 lets the kernel pick a free one (`fetchctl status` shows it).
    public var port: Int

    /// Creates an address.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[HOST]:PORT`; nil when it is not an IP literal and a port.
    public static func parse(_ text: String) -> ListenAddress? {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
            guard isIPv6(String(host)) else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard isIPv4(String(host)) else { return nil }
        }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber),
              let port = Int(portText), (0...65_535).contains(port) else { return nil }
        return ListenAddress(host: String(host), port: port)
    }

    /// Whether only this machine can connect (127.0.0.0/8 or ::1).
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    /// `127.0.0.1:8617` or `[::1]:8617`.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether `text` is an IPv4 address (dotted quad).
    static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }

    /// Whether `text` is an IPv6 address (without brackets).
    static func isIPv6(_ text: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, text, &address) == 1
    }
}
