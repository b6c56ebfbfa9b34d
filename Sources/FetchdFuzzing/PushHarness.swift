import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdPush
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The push target's listener: a real `PushListener` on a free loopback port, started once per
/// process, over a sink that checks pushes as the daemon does. Each input is sent on a fresh
/// connection, whose sending side is then shut down (so a request cut short ends at once
/// instead of at the read timeout); the listener must answer with an HTTP status or close, and
/// every 64 inputs a well-formed push must still be taken (202).
final class PushHarness: Sendable {
    /// The one listener of this process.
    static let shared = PushHarness()
    /// The token of handler `feed`, the only handler taking pushes.
    static let token = "fuzz-token-" + String(repeating: "0123456789abcdef", count: 2)
    /// The longest wait for an answer or the close, in seconds. The listener's read timeout is
    /// 1 s; the margin is for a loaded machine (`make test` replays the seeds beside a hundred
    /// other tests sharing the process's threads), so only a listener that hangs trips it.
    static let replySeconds = 30

    private let port: UInt16
    private let exchanges = Atomic<Int>(0)

    private init() {
        let sink = Sink()
        var logger = Logger(label: "fetchd-fuzz-push")
        logger.logLevel = .critical
        var limits = PushListener.Limits()
        limits.readTimeoutSeconds = 1
        // Every input comes from 127.0.0.1, most with no token or a wrong one: as the one
        // trusted proxy, that address is never locked out, so the good push every 64 inputs
        // tells a listener that broke from one that only did its job.
        limits.trustedProxy = "127.0.0.1"
        let listener = PushListener(address: ListenAddress(host: "127.0.0.1", port: 0), sink: sink, logger: logger,
                                    limits: limits)
        Task.detached { try? await listener.run() }
        var port: UInt16?
        for _ in 0..<1000 where port == nil {
            port = sink.address.flatMap { $0.split(separator: ":").last.flatMap { UInt16($0) } }
            if port == nil { usleep(10_000) }
        }
        guard let port else { preconditionFailure("the push listener did not start within 10 s") }
        self.port = port
    }

    /// Sends `bytes` as one client would and checks the answer; then, now and again, that the
    /// listener still takes a good push.
    func exchange(_ bytes: [UInt8]) {
        let reply = send(bytes)
        precondition(reply.isEmpty || Self.status(of: reply) != nil,
                     "the push listener answered something that is not an HTTP response: \(String(decoding: reply.prefix(200), as: UTF8.self))")
        guard exchanges.add(1, ordering: .relaxed).newValue % 64 == 1 else { return }
        let good = Array("POST /push/feed HTTP/1.1\r\nHost: fuzz\r\nAuthorization: Bearer \(Self.token)\r\nContent-Length: 8\r\n\r\n{\"id\":1}".utf8)
        let status = Self.status(of: send(good))
        precondition(status == 202, "after fuzz input, a good push got \(status.map(String.init) ?? "no answer"), not 202")
    }

    /// The status of an HTTP/1.1 response's first line.
    static func status(of reply: [UInt8]) -> Int? {
        let head = Array("HTTP/1.1 ".utf8)
        guard reply.count >= head.count + 3, Array(reply.prefix(head.count)) == head else { return nil }
        return Int(String(decoding: reply[head.count..<(head.count + 3)], as: UTF8.self)).flatMap { (100...599).contains($0) ? $0 : nil }
    }

    /// One connection: `bytes` sent, the sending side shut down, everything read until the
    /// listener closes. Traps when it neither answers nor closes in `replySeconds`.
    private func send(_ bytes: [UInt8]) -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0, "socket(): \(String(cString: strerror(errno)))")
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        precondition(connected == 0, "the push listener refused a connection: \(String(cString: strerror(errno)))")
        var timeout = timeval(tv_sec: Self.replySeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < bytes.count {
            // MSG_NOSIGNAL: a listener that closed early (a refusal) must not kill the fuzzer.
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0, errno == EINTR { continue }  // libFuzzer's own timer signal
            if count <= 0 { break }  // closed after an early answer: read it
            sent += count
        }
        shutdown(fd, Int32(SHUT_WR))
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(Self.replySeconds)
        while reply.count < 1 << 20 {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { reply += buffer[..<count]; continue }
            if count < 0, errno == EINTR, ContinuousClock.now < deadline { continue }
            precondition(count == 0 || errno == ECONNRESET,
                         "the push listener neither answered nor closed within \(Self.replySeconds) s (errno \(errno))")
            break
        }
        return reply
    }

    /// Knows one handler, `feed`, with `token`; checks push data as the daemon does.
    private final class Sink: PushSink {
        private let listening = Mutex<String?>(nil)

        /// Where the listener said it listens.
        var address: String? { listening.withLock { $0 } }

        func pushToken(of handler: String) async -> String? { handler == "feed" ? PushHarness.token : nil }

        func push(_ handler: String, data: [UInt8]) async throws(PushRefusal) -> PushReport {
            do { _ = try PushData.validate(data) } catch { throw .badData(error) }
            return PushReport.now(handler: handler, limit: "none")
        }

        func listenerAddressChanged(_ address: String?) async { listening.withLock { $0 = address } }
    }
}
