import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The tests' one HTTP server launcher: a real server process on 127.0.0.1 (a Python script of
/// `TestHTTPServer.Script`, or nginx), started per test on a free port and killed by `stop()`
/// or when released.
///
/// A real process because that is the point: sockets, timing and misbehaviour as a remote
/// server has them, not a mock inside the test's own process.
public final class TestHTTPServer: Sendable {
    /// A Python server program, run as `python3 -c source PORT arguments...`: it must listen on
    /// 127.0.0.1 at the port its first argument names.
    public struct Script: Sendable {
        /// The program.
        public var source: String

        /// A script from its source.
        public init(_ source: String) { self.source = source }
    }

    /// Why a server could not be used.
    public enum ServerError: Error {
        /// The server never accepted a connection.
        case didNotStart
        /// A socket call failed with this errno.
        case socket(Int32)
        /// A request to it got this status (nil: no answer).
        case status(Int?, path: String)
    }

    /// The port it listens on.
    public let port: Int
    /// The process, until it is stopped.
    private let pid: Mutex<pid_t?>

    /// Starts `script` with `arguments` after the port.
    public convenience init(_ script: Script, arguments: [String] = []) throws {
        try self.init { port in ["python3", "-c", script.source, String(port)] + arguments }
    }

    /// Starts `command(port)` on a free port and waits until it accepts connections, trying
    /// another port when the process exits first (the port was taken meanwhile).
    public init(command: (Int) -> [String]) throws {
        for _ in 0..<5 {
            let port = try Self.freePort()
            let pid = try spawnProcess(command(port))
            let limit = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < limit {
                if waitpid(pid, nil, WNOHANG) == pid { break }  // exited: try another port
                if Self.canConnect(to: port) {
                    self.port = port
                    self.pid = Mutex(pid)
                    return
                }
                usleep(50_000)
            }
            kill(pid, SIGKILL)
            waitpid(pid, nil, 0)
        }
        throw ServerError.didNotStart
    }

    deinit { stop() }

    /// The URL of `path` on this server.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// GETs `path` and returns the body; throws unless the status is 200.
    @discardableResult
    public func get(_ path: String) async throws -> String {
        let reply = await RawHTTPClient.exchange(port: port, RawHTTPClient.get(path))
        guard reply.status == 200 else { throw ServerError.status(reply.status, path: path) }
        return reply.body
    }

    /// Kills the server and reaps it (once; later calls do nothing).
    public func stop() {
        guard let running = pid.withLock({ pid in defer { pid = nil }; return pid }) else { return }
        kill(running, SIGKILL)
        waitpid(running, nil, 0)
    }

    /// A port nothing listens on right now: bound to port 0, read back, closed.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError.socket(errno) }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw ServerError.socket(errno) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw ServerError.socket(errno) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether a TCP connection to 127.0.0.1:`port` succeeds.
    static func canConnect(to port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
