import FetchdControl
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The clients already waiting on a listening control socket that fetchd will not serve (it is
/// about to exit before it could: its configuration cannot be used, or another fetchd holds the
/// cache). Under socket activation a connection left waiting when fetchd exits makes systemd
/// start it again at once, until the start limit fails `fetchd.socket` too; answered and
/// closed, it does not, and its client learns why.
public enum PendingConnections {
    /// How long all the waiting clients together have to send their request lines, in
    /// milliseconds: a client that trickles bytes cannot keep fetchd from exiting.
    static let totalWaitMilliseconds = 2000
    /// The most connections answered (a client that keeps connecting cannot either).
    static let maxAnswered = 64

    /// Accepts each connection waiting on `listeningSocket` (without blocking), reads its request
    /// line, and answers `response` to the peers `PeerPolicy` lets in (root, fetchd's own user,
    /// members of the socket file's group); others are closed unanswered. Returns how many were
    /// answered. The listening socket stays open: it is systemd's.
    public static func answerAll(on listeningSocket: Int32, with response: ControlResponse) -> Int {
        var line = (try? ControlProtocol.encoder().encode(response)) ?? Data()
        line.append(UInt8(ascii: "\n"))
        let policy = PeerPolicy(groupID: socketFileGroup(listeningSocket))
        let deadline = ContinuousClock.now + .milliseconds(totalWaitMilliseconds)
        var answered = 0, accepted = 0
        while accepted < maxAnswered {
            // Only what already waits: poll without waiting, so accept cannot block (the socket's
            // flags are systemd's, shared, and not changed here).
            var listening = pollfd(fd: listeningSocket, events: Int16(POLLIN), revents: 0)
            guard poll(&listening, 1, 0) > 0, listening.revents & Int16(POLLIN) != 0 else { break }
            let connection = accept(listeningSocket, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            accepted += 1
            defer { close(connection) }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
            guard let peer = PeerCredentials(socket: connection), policy.refusal(for: peer) == nil else { continue }
            awaitRequest(connection, until: deadline)
            if send(line, to: connection, until: deadline) { answered += 1 }
        }
        return answered
    }

    /// The group of the socket's file (from its bound path), which `SocketGroup=` sets.
    private static func socketFileGroup(_ socket: Int32) -> UInt32? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        var info = stat()
        guard !path.isEmpty, stat(path, &info) == 0 else { return nil }
        return info.st_gid
    }

    /// Milliseconds left until `deadline` (0 once past it).
    private static func remaining(_ deadline: ContinuousClock.Instant) -> Int32 {
        let left = ContinuousClock.now.duration(to: deadline).components
        return Int32(max(0, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000))
    }

    /// Reads what the client sent until its first newline, or `deadline`: answering before the
    /// request came would make the client's own send fail instead of showing the answer.
    private static func awaitRequest(_ connection: Int32, until deadline: ContinuousClock.Instant) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var waited = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
        while poll(&waited, 1, remaining(deadline)) > 0 {
            let count = recv(connection, &buffer, buffer.count, 0)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if count <= 0 || buffer[0..<count].contains(UInt8(ascii: "\n")) { return }
        }
    }

    /// Writes `line` whole, waiting for room until `deadline`; false if it could not.
    private static func send(_ line: Data, to connection: Int32, until deadline: ContinuousClock.Instant) -> Bool {
        line.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.send(connection, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if written < 0 && errno == EINTR { continue }
                if written < 0 && errno == EAGAIN {
                    var out = pollfd(fd: connection, events: Int16(POLLOUT), revents: 0)
                    if poll(&out, 1, remaining(deadline)) <= 0 { return false }
                    continue
                }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }
}
