import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The clients already waiting on a listening control socket that fetchd will not serve (it is
/// about to exit: its configuration cannot be used). Under socket activation a connection left
/// waiting when fetchd exits makes systemd start it again at once, and five failed starts in ten
/// seconds fail `fetchd.socket` too; answered and closed, it does not, and its client learns why.
public enum PendingConnections {
    /// How long a client that connected has to send its request line, in milliseconds.
    static let requestWaitMilliseconds: Int32 = 1000
    /// The most connections answered (a bound: a client that keeps connecting cannot keep fetchd
    /// from exiting).
    static let maxAnswered = 64

    /// Accepts each connection waiting on `listeningSocket` (without blocking), reads its request
    /// line (for at most a second), answers `response` and closes it. Returns how many were
    /// answered. The listening socket stays open: it is systemd's.
    public static func answerAll(on listeningSocket: Int32, with response: ControlResponse) -> Int {
        var line = (try? ControlProtocol.encoder().encode(response)) ?? Data()
        line.append(UInt8(ascii: "\n"))
        var answered = 0
        while answered < maxAnswered {
            // Only what already waits: poll without waiting, so accept cannot block (the socket's
            // flags are systemd's, shared, and not changed here).
            var listening = pollfd(fd: listeningSocket, events: Int16(POLLIN), revents: 0)
            guard poll(&listening, 1, 0) > 0, listening.revents & Int16(POLLIN) != 0 else { break }
            let connection = accept(listeningSocket, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                break
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
            awaitRequest(connection)
            line.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = send(connection, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                    if written < 0 && errno == EINTR { continue }
                    if written < 0 && errno == EAGAIN {
                        var out = pollfd(fd: connection, events: Int16(POLLOUT), revents: 0)
                        if poll(&out, 1, requestWaitMilliseconds) <= 0 { return }
                        continue
                    }
                    guard written > 0 else { return }
                    offset += written
                }
            }
            close(connection)
            answered += 1
        }
        return answered
    }

    /// Reads what the client sent until its first newline, or a second has passed: answering
    /// before the request came would make the client's own send fail instead of showing the answer.
    private static func awaitRequest(_ connection: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var waited = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
        while poll(&waited, 1, requestWaitMilliseconds) > 0 {
            let count = recv(connection, &buffer, buffer.count, 0)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if count <= 0 || buffer[0..<count].contains(UInt8(ascii: "\n")) { return }
        }
    }
}
