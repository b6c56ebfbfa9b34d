import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A deliberately plain HTTP/1.1 client over a POSIX socket, so tests can send what a real
/// client library would refuse to: oversized headers, a trickle, a body that lies about itself.
/// The blocking socket calls run on a thread of their own, never on Swift's cooperative pool
/// (the server under test needs that pool).
public enum RawHTTPClient {
    /// What came back.
    public struct Reply: Sendable {
        /// The status code, or nil when the server closed without answering.
        public var status: Int?
        /// The header block, as text.
        public var headers: String
        /// The body, as text.
        public var body: String
        /// Whether the server closed the connection after the reply.
        public var closed: Bool
        /// What the wait for the close after the reply saw, for failure messages: `end`,
        /// `reset`, `nothing in N ms`, `N more bytes`, or empty when the close came with the reply.
        public var afterReply = ""
    }

    /// A `GET path` request that asks the server to close the connection after its reply.
    public static func get(_ path: String) -> [UInt8] {
        Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
    }

    /// A `POST path` request with `headers` and `body` (Content-Length set from it).
    public static func post(_ path: String, headers: [String] = [], body: String = "") -> [UInt8] {
        let lines = ["POST \(path) HTTP/1.1", "Host: 127.0.0.1", "Content-Length: \(body.utf8.count)"] + headers
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)
    }

    /// Sends `request` to 127.0.0.1:`port` (a partial request is sent as it is, and nothing
    /// more) and reads one reply; waits at most `timeoutSeconds` for the server. `source` is the
    /// local address to connect from (another loopback address, such as 127.0.0.2, to be another
    /// local client); nil lets the kernel choose (127.0.0.1).
    public static func exchange(port: Int, _ request: [UInt8], timeoutSeconds: Int = 20, from source: String? = nil) async -> Reply {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: blockingExchange(port: port, request, timeoutSeconds: timeoutSeconds, from: source))
            }
            thread.start()
        }
    }

    private static func blockingExchange(port: Int, _ request: [UInt8], timeoutSeconds: Int, from source: String?) -> Reply {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return Reply(status: nil, headers: "socket failed", body: "", closed: true) }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { return Reply(status: nil, headers: "bind to \(source) failed (errno \(errno))", body: "", closed: true) }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return Reply(status: nil, headers: "connect failed", body: "", closed: true) }
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { break }  // the server may close early (a refusal): read what it said
            sent += count
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var closed = false
        var afterReply = ""
        while true {
            if let reply = parse(received), let length = reply.contentLength, reply.bodyStart + length <= received.count {
                break
            }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { closed = count == 0 || errno == ECONNRESET; break }
            received += buffer[0..<count]
        }
        if !closed {
            // Did the server close after the reply? A short wait tells; a longer one when the
            // reply says it will (`Connection: close`), which a loaded machine may take seconds
            // to carry out.
            let promised = parse(received)?.headers.lowercased().contains("\r\nconnection: close") ?? false
            var brief = promised ? timeval(tv_sec: 10, tv_usec: 0) : timeval(tv_sec: 0, tv_usec: 300_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &brief, socklen_t(MemoryLayout<timeval>.size))
            // A close with unread data in the server's buffer arrives as a reset, not an end of
            // file: closed all the same.
            let waited = ContinuousClock.now
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            let error = errno
            closed = count == 0 || (count < 0 && error == ECONNRESET)
            afterReply = count == 0 ? "end" : count > 0 ? "\(count) more bytes"
                : error == ECONNRESET ? "reset" : "nothing in \((ContinuousClock.now - waited).components.seconds) s (errno \(error))"
        }
        guard let reply = parse(received) else {
            return Reply(status: nil, headers: String(decoding: received, as: UTF8.self), body: "", closed: closed,
                         afterReply: afterReply)
        }
        let body = received[reply.bodyStart...].prefix(reply.contentLength ?? Int.max)
        return Reply(status: reply.status, headers: reply.headers, body: String(decoding: body, as: UTF8.self), closed: closed,
                     afterReply: afterReply)
    }

    private static func parse(_ bytes: [UInt8]) -> (status: Int, headers: String, bodyStart: Int, contentLength: Int?)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4, let end = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            return nil
        }
        let headers = String(decoding: bytes[..<end], as: UTF8.self)
        let statusLine = headers.split(separator: "\r\n").first ?? ""
        guard let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        let length = headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
        return (status, headers, end + 4, length)
    }
}
