import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real server process on 127.0.0.1 (Python), started for one test and killed after it.
struct LoopbackServer {
    /// The server process.
    let pid: pid_t
    /// The port it listens on.
    let port: UInt16

    /// A static file server for `directory` (`python3 -m http.server`).
    static func files(in directory: String) throws -> LoopbackServer {
        try start { port in
            ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", directory, String(port)]
        }
    }

    /// A server that accepts connections and never answers.
    static func stalled() throws -> LoopbackServer {
        let script = """
            import socket, sys
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", int(sys.argv[1])))
            server.listen(16)
            held = []
            while True:
                connection, _ = server.accept()
                held.append(connection)
            """
        return try start { port in ["python3", "-c", script, String(port)] }
    }

    /// A server answering every request with an HTTP/1.0 200 whose body of `bodyBytes` bytes
    /// has no Content-Length (it ends when the connection closes).
    static func unsizedBody(bodyBytes: Int) throws -> LoopbackServer {
        let script = """
            import socket, sys
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", int(sys.argv[1])))
            server.listen(16)
            body = b"a" * int(sys.argv[2])
            while True:
                connection, _ = server.accept()
                try:
                    connection.settimeout(2)
                    connection.recv(65536)
                    connection.sendall(b"HTTP/1.0 200 OK\\r\\nContent-Type: text/plain\\r\\n\\r\\n" + body)
                except OSError:
                    pass
                connection.close()
            """
        return try start { port in ["python3", "-c", script, String(port), String(bodyBytes)] }
    }

    /// Starts `arguments(port)` on a free port and waits until it accepts connections,
    /// retrying on another port if the process exits first (e.g. the port was taken).
    static func start(_ arguments: (UInt16) -> [String]) throws -> LoopbackServer {
        for _ in 0..<5 {
            let port = try freePort()
            let pid = try spawnProcess(arguments(port))
            let limit = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < limit {
                if waitpid(pid, nil, WNOHANG) == pid { break }  // exited: try another port
                if canConnect(to: port) { return LoopbackServer(pid: pid, port: port) }
                usleep(50_000)
            }
            kill(pid, SIGKILL)
            waitpid(pid, nil, 0)
        }
        throw ServerError.didNotStart
    }

    /// Kills the server and reaps it.
    func stop() {
        kill(pid, SIGKILL)
        waitpid(pid, nil, 0)
    }

    /// Why a server could not be used.
    enum ServerError: Error {
        /// The server never accepted a connection.
        case didNotStart
        /// A socket call failed with this errno.
        case socket(Int32)
    }

    /// A port nothing listens on right now: bound to port 0, read back, closed.
    static func freePort() throws -> UInt16 {
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
        return UInt16(bigEndian: address.sin_port)
    }

    /// Whether a TCP connection to 127.0.0.1:`port` succeeds.
    static func canConnect(to port: UInt16) -> Bool {
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

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
