import CPosixShim
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One connection between fetchd and fetchd-runas (a SOCK_SEQPACKET Unix socket): JSON messages
/// with their boundaries kept, a descriptor passed along with a message. Owns its descriptor.
public final class RunasConnection: @unchecked Sendable {
    /// Why a message could not be sent or received, in words for a failure reason.
    public struct Failure: Error, CustomStringConvertible {
        /// E.g. `cannot reach fetchd-runas at /run/fetchd-runas.sock: No such file or directory`.
        public let description: String
    }

    /// A message received, with the descriptor that came with it (-1: none), which the caller owns.
    public struct Message {
        /// The message's bytes.
        public let bytes: Data
        /// The descriptor passed with it, or -1.
        public let descriptor: Int32
    }

    /// The socket.
    public let descriptor: Int32

    /// Takes over `descriptor` (fetchd-runas's connection, handed over by systemd as stdin).
    public init(adopting descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Connects to fetchd-runas's socket at `path`.
    public init(connectingTo path: String) throws(Failure) {
        let fd = fetchd_seqpacket_connect(path)
        guard fd >= 0 else {
            let why = String(cString: strerror(errno))
            throw Failure(description: "cannot reach fetchd-runas at \(path): \(why); "
                + "it starts programs for the system service (systemctl enable --now fetchd-runas.socket)")
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Sends `value` as one JSON message, with `passing` attached when it is not -1.
    public func send(_ value: some Encodable, passing: Int32 = -1) throws(Failure) {
        let bytes: Data
        do { bytes = try JSONEncoder().encode(value) } catch {
            throw Failure(description: "cannot encode a message for fetchd-runas: \(error)")
        }
        let sent = bytes.withUnsafeBytes { fetchd_send_with_descriptor(descriptor, $0.baseAddress, UInt($0.count), passing) }
        guard sent == bytes.count else {
            throw Failure(description: "cannot send to fetchd-runas: \(sent < 0 ? String(cString: strerror(errno)) : "cut short")")
        }
    }

    /// The next message, at most `limit` bytes: waiting for it when `wait`, else nil when none
    /// has come yet. A closed connection is a failure.
    public func receive(limit: Int, wait: Bool) throws(Failure) -> Message? {
        var buffer = [UInt8](repeating: 0, count: limit)
        var passed: Int32 = -1
        let count = buffer.withUnsafeMutableBytes {
            fetchd_receive_with_descriptor(descriptor, $0.baseAddress, UInt($0.count), wait ? 1 : 0, &passed)
        }
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
            throw Failure(description: errno == EMSGSIZE ? "a message over \(limit) bytes"
                : "cannot receive: \(String(cString: strerror(errno)))")
        }
        guard count > 0 else {
            if passed >= 0 { close(passed) }
            throw Failure(description: "the connection was closed")
        }
        return Message(bytes: Data(buffer[..<count]), descriptor: passed)
    }
}
