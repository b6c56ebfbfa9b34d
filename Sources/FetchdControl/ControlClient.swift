import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A blocking client for the control socket, for `fetchctl` and tests.
public struct ControlClient: Sendable {
    /// The socket's path.
    public let path: String
    /// How long to wait for an answer, in seconds; 0 waits as long as it takes.
    public var timeoutSeconds: Int
    /// The longest answer accepted, in bytes.
    public static let maxResponseBytes = 16 * 1024 * 1024

    /// Creates a client; nothing is connected until `send`.
    public init(path: String, timeoutSeconds: Int = 30) {
        self.path = path
        self.timeoutSeconds = timeoutSeconds
    }

    /// Sends one request and returns the answer.
    public func send(_ request: ControlRequest) throws(ControlError) -> ControlResponse {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ControlError(code: .internalError, message: "socket(): \(Self.errorText())") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // On Linux a Unix-socket connect() waits on the send timeout when the daemon's backlog is
        // full (a stalled daemon): bounded too, not forever.
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        try connect(fd)
        var payload: Data
        do { payload = try ControlProtocol.encoder().encode(request) } catch {
            throw ControlError(code: .badRequest, message: "cannot encode the request: \(error)")
        }
        payload.append(UInt8(ascii: "\n"))
        let sent = payload.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let sendError = sent == payload.count ? nil : Self.errorText()
        // A daemon that refuses a peer answers at once and closes, possibly before the request is
        // sent: read its answer before reporting the failed send.
        let line: Data
        do {
            line = try readLine(fd)
        } catch {
            if let sendError {
                throw ControlError(code: .internalError, message: "cannot send to \(path): \(sendError)")
            }
            throw error
        }
        do {
            return try ControlProtocol.decoder().decode(ControlResponse.self, from: line)
        } catch {
            throw ControlError(code: .badRequest, message: "fetchd sent an answer this fetchctl cannot read: \(error)")
        }
    }

    private func connect(_ fd: Int32) throws(ControlError) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            throw ControlError(code: .badRequest, message: "socket path too long (max \(capacity - 1) bytes): \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: path.utf8)
            buffer[path.utf8.count] = 0
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc != 0 else { return }
        let code = errno
        let message = switch code {
        case ENOENT:
            "fetchd is not running: there is no control socket at \(path) (start it with 'systemctl start fetchd' "
                + "or, for a user service, 'systemctl --user start fetchd'; or pass --socket)"
        case ECONNREFUSED:
            "fetchd is not running and \(path) is not listening: fetchd.socket is stopped or failed "
                + "(see 'systemctl status fetchd.socket fetchd'; --user for a user service); once the cause is fixed: "
                + "'systemctl reset-failed fetchd.socket fetchd; systemctl start fetchd.socket fetchd'"
        case EACCES, EPERM:
            "permission denied on \(path): run fetchctl as root, as the daemon's user, or as a member of its control_group. "
                + ControlAccess.operatorRecipe
        default:
            "cannot connect to \(path): \(String(cString: strerror(code)))"
        }
        throw ControlError(code: .internalError, message: message)
    }

    private func readLine(_ fd: Int32) throws(ControlError) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw ControlError(code: .internalError, message: "fetchd did not answer within \(timeoutSeconds) s")
            }
            guard count > 0 else {
                if data.isEmpty { throw ControlError(code: .internalError, message: "fetchd closed the connection without answering (did it fail to start? see 'systemctl status fetchd')") }
                return data
            }
            if let newline = buffer[0..<count].firstIndex(of: UInt8(ascii: "\n")) {
                data.append(contentsOf: buffer[0..<newline])
                return data
            }
            data.append(contentsOf: buffer[0..<count])
            if data.count > Self.maxResponseBytes {
                throw ControlError(code: .internalError, message: "fetchd's answer exceeds \(Self.maxResponseBytes) bytes")
            }
        }
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}
