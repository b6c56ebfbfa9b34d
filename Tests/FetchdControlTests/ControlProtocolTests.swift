import FetchdControl
import FetchdControlServer
import FetchdTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A control handler with canned answers, to test the socket and protocol alone.
private struct CannedHandler: ControlRequestHandler {
    func handle(_ request: ControlRequest, from peer: PeerCredentials) async -> ControlResponse {
        switch request.command {
        case .ping: return ControlResponse(pong: PingReport(daemonVersion: "test", pid: peer.pid))
        case .fetch where request.handler == "news":
            return ControlResponse(fetch: FetchReport(handler: "news", result: "newData", durationMilliseconds: 5))
        case .fetch: return .failure(.unknownHandler, "no handler named \(request.handler ?? "")")
        case .status, .history, .wake, .used, .usage, .push, .reload: return .failure(.badRequest, "not in this test")
        }
    }
}

/// The control socket: framing, versioning, errors, permissions and peer checks.
@Suite(.serialized)
struct ControlProtocolTests {
    /// Runs a control server on a temp socket for the duration of `body`.
    private func withServer(mode: Int = 0o660, _ body: (String) async throws -> Void) async throws {
        let directory = try TemporaryDirectory("control")
        defer { directory.remove() }
        chmod(directory.path, 0o755)
        let path = directory.file("control.sock")
        // Ready means bound and given its mode: the file alone appears a moment before the chmod.
        let ready = Mutex(false)
        let server = ControlServer(path: path, mode: mode, policy: try PeerPolicy(groupName: nil),
                                   handler: CannedHandler(), logger: Logger(label: "test"),
                                   onReady: { ready.withLock { $0 = true } })
        let group = ServiceGroup(services: [server], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(await waitUntil(timeoutSeconds: 10) { ready.withLock { $0 } })
            // Stopped gracefully even when the body fails: cancelled with a connection accepted
            // and not yet served, NIO's server channel traps (apple/swift-nio#2637).
            do {
                try await body(path)
            } catch {
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(!FileManager.default.fileExists(atPath: path), "the socket file was left behind")
    }

    @Test func requestsRoundTrip() async throws {
        try await withServer { path in
            let client = ControlClient(path: path, timeoutSeconds: Int(SanitizerRun.scaled(5)))
            let pong = try await onOwnThread { try client.send(ControlRequest(command: .ping)) }.pong
            #expect(pong?.daemonVersion == "test")
            #expect(pong?.pid == getpid(), "the peer's pid should come from SO_PEERCRED")
            let fetch = try await onOwnThread { try client.send(ControlRequest(command: .fetch, handler: "news", wait: true)) }
            #expect(fetch.ok && fetch.fetch?.result == "newData")
            let unknown = try await onOwnThread { try client.send(ControlRequest(command: .fetch, handler: "nope")) }
            #expect(!unknown.ok && unknown.error?.code == .unknownHandler)
        }
    }

    @Test func socketIsCreatedWithTheConfiguredMode() async throws {
        try await withServer(mode: 0o600) { path in
            var info = stat()
            #expect(stat(path, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600)
        }
    }

    @Test func malformedAndWrongVersionRequestsGetClearErrors() async throws {
        try await withServer { path in
            let garbage = try await rawExchange(path, "this is not json\n")
            #expect(garbage.contains("bad-request"), "\(garbage)")
            let future = try await rawExchange(path, #"{"version":99,"command":"ping"}"# + "\n")
            #expect(future.contains("unsupported-version"), "\(future)")
            let unknown = try await rawExchange(path, #"{"version":1,"command":"explode"}"# + "\n")
            #expect(unknown.contains("bad-request"), "\(unknown)")
        }
    }

    /// A script that writes its request and shuts down its sending side (`socat`, `nc -N`, a
    /// pipe) still gets the answer before the connection closes.
    @Test func aClientThatHalfClosesGetsItsAnswer() async throws {
        try await withServer { path in
            let answer = try await onOwnThread {
                try Self.blockingExchange(path, #"{"version":1,"command":"ping"}"# + "\n", halfClose: true)
            }
            #expect(answer.contains("\"ok\":true") && answer.contains("pong"), "\(answer)")
            let unterminated = try await onOwnThread {
                try Self.blockingExchange(path, #"{"version":1,"command":"ping"}"#, halfClose: true)
            }
            #expect(unterminated.contains("\"ok\":true"), "a last line without its newline: \(unterminated)")
        }
    }

    @Test func oversizedRequestIsCutOffAndTheServerCarriesOn() async throws {
        try await withServer { path in
            let flood = String(repeating: "x", count: ControlProtocol.maxLineBytes * 2)
            _ = try? await rawExchange(path, flood)
            let pong = try await onOwnThread {
                try ControlClient(path: path, timeoutSeconds: Int(SanitizerRun.scaled(5))).send(ControlRequest(command: .ping))
            }
            #expect(pong.ok, "the server stopped answering after an oversized request")
        }
    }

    static let canSwitchUser = geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    @Test(.enabled(if: canSwitchUser, "needs root and setpriv to act as another user"))
    func unauthorisedPeerIsRefused() async throws {
        // Mode 0666 lets the stranger connect, so the refusal proves the SO_PEERCRED check.
        try await withServer(mode: 0o666) { path in
            let (status, output) = try await onOwnThread {
                try Self.runAsNobody([TestBinaries.path(of: "fetchctl"), "ping", "--socket", path])
            }
            #expect(status == 1)
            #expect(output.contains("may not use the fetchd control socket"), "got: \(output)")
            // The refusal names the key that admits a user, and the recipe.
            #expect(output.contains("fetchd.toml sets no control_group") && output.contains(ControlAccess.operatorRecipe),
                    "got: \(output)")
        }
        try await withServer(mode: 0o660) { path in
            let (status, output) = try await onOwnThread {
                try Self.runAsNobody([TestBinaries.path(of: "fetchctl"), "ping", "--socket", path])
            }
            #expect(status == 1)
            #expect(output.contains("permission denied") && output.contains(ControlAccess.operatorRecipe), "got: \(output)")
        }
    }

    private static func runAsNobody(_ command: [String]) throws -> (Int32, String) {
        try ChildProcess.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups"] + command)
    }

    /// Sends `text` on a fresh connection and returns the first reply read (on a thread of its own).
    private func rawExchange(_ path: String, _ text: String) async throws -> String {
        try await onOwnThread { try Self.blockingExchange(path, text) }
    }

    /// `halfClose`: shut down the sending side after the request, as `socat` does at end of input.
    private static func blockingExchange(_ path: String, _ text: String, halfClose: Bool = false) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8 + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        _ = text.withCString { send(fd, $0, strlen($0), 0) }
        if halfClose { shutdown(fd, Int32(SHUT_WR)) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var timeout = timeval(tv_sec: Int(SanitizerRun.scaled(5)), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let count = recv(fd, &buffer, buffer.count, 0)
        return String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)
    }
}
