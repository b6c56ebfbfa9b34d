import FetchdControl
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Random and mutated requests on the real daemon's control socket: every line gets one answer
/// that is a valid response, and the daemon keeps serving (issue 7, bad input). Deterministic:
/// the generator is seeded, and a failure names the request that caused it.
@Suite(.serialized)
struct ControlFuzzTests {
    static let requestCount = 1_500

    @Test func randomRequestsEachGetOneValidAnswerAndTheDaemonLives() async throws {
        let daemon = try DaemonProcess(handlers: """
            [[handler]]
            name = "quick"
            command = ["/bin/true"]
            min_interval = "1h"
            usage = ["explicit"]
            """)
        try await daemon.start()
        defer { daemon.stopAndReadLog() }
        // The blocking socket round trips run on a thread of their own, not on one of the two
        // threads of Swift's shared pool, which the other suites' timers need.
        let socketPath = daemon.socketPath
        let failure: String? = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Self.exchange(socketPath)) }
        }
        #expect(failure == nil, "\(failure ?? "")")
        // An over-long line ends that connection, not the daemon.
        let long = try LineSocket(path: daemon.socketPath)
        try? long.send([UInt8](repeating: UInt8(ascii: "x"), count: ControlProtocol.maxLineBytes + 10) + [10])
        _ = try? long.readLine()
        let pong = try ControlClient(path: daemon.socketPath, timeoutSeconds: Int(SanitizerRun.scaled(5))).send(ControlRequest(command: .ping))
        #expect(pong.ok)
        // Handler names from requests never became paths outside the cache.
        let cache = try FileManager.default.contentsOfDirectory(atPath: daemon.cachePath)
        #expect(cache.allSatisfy { $0 == "quick" || $0.hasPrefix(".") }, "\(cache)")
        #expect(FileManager.default.fileExists(atPath: daemon.directory.path + "/etc/fetchd.toml"))
        _ = await daemon.stopWithoutBlocking()  // then the deferred stop has nothing to wait for
    }
}

extension ControlFuzzTests {
    /// Sends the generated requests on one connection; returns the first failure, or nil.
    static func exchange(_ socketPath: String) -> String? {
        var generator = RequestGenerator(seed: 20_261_121)
        guard let connection = try? LineSocket(path: socketPath) else { return "cannot connect to \(socketPath)" }
        for index in 0..<requestCount {
            let request = generator.nextRequest()
            let shown = String(decoding: request.prefix(200), as: UTF8.self)
            guard (try? connection.send(request + [UInt8(ascii: "\n")])) != nil,
                  let answer = try? connection.readLine() else { return "request \(index) \(shown): the connection ended" }
            if (try? ControlProtocol.decoder().decode(ControlResponse.self, from: Data(answer))) == nil {
                return "request \(index) \(shown) got \(String(decoding: answer.prefix(300), as: UTF8.self))"
            }
        }
        return nil
    }
}

/// Request lines: valid ones, valid ones with fields of the wrong type or out of range,
/// hostile handler names, broken JSON, bytes that are not UTF-8.
private struct RequestGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    private mutating func random(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(bound))
    }

    private mutating func pick<T>(_ choices: [T]) -> T { choices[random(choices.count)] }

    static let commands = ControlRequest.Command.allCases.map(\.rawValue) + ["", "PING", "explode", "fetch\u{0}", "ÿ"]
    static let names = ["quick", "nope", "", "../etc", "../../x", "/abs", "quick/../quick", ".hidden", "a\u{0}b",
                        String(repeating: "n", count: 5_000), "ñame", "name with space", "\\u0000", "quick\n"]

    private mutating func value() -> String {
        pick(["null", "true", "false", "0", "-1", "1e308", "-9223372036854775809", "9223372036854775807", "1.5",
              "\"\"", "\"x\"", "[]", "{}", "[1,[2,[3]]]", "{\"a\":{\"b\":null}}",
              quoted(pick(Self.names))])
    }

    /// `text` as a JSON string.
    private func quoted(_ text: String) -> String {
        let escaped = text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\u{0}", with: "\\u0000")
        return "\"\(escaped)\""
    }

    mutating func nextRequest() -> [UInt8] {
        var fields = ["\"version\":\(pick(["1", "1", "1", "0", "2", "\"1\"", "null"]))",
                      "\"command\":\"\(pick(Self.commands).replacingOccurrences(of: "\u{0}", with: "\\u0000"))\""]
        let typed = random(2) == 0
        if typed {
            // Well-typed, hostile values: these reach the daemon's handlers.
            fields = ["\"version\":1", "\"command\":\"\(pick(ControlRequest.Command.allCases).rawValue)\""]
            fields.append("\"handler\":\(quoted(pick(Self.names + ["quick", "quick", "quick"])))")
            if random(2) == 0 { fields.append("\"wait\":\(pick(["true", "false"]))") }
            if random(2) == 0 { fields.append("\"limit\":\(pick(["-1", "0", "1", "1000000000", "9223372036854775807"]))") }
            if random(2) == 0 { fields.append("\"markSeen\":\(pick(["true", "false"]))") }
        } else {
            for key in ["handler", "wait", "limit", "markSeen", "extra"] where random(3) == 0 {
                fields.append("\"\(key)\":\(value())")
            }
        }
        var text = Array("{\(fields.shuffled(using: &self).joined(separator: ","))}".utf8)
        switch typed ? -1 : random(5) {
        case 0: text = Array(text.prefix(random(text.count + 1)))  // cut short
        case 1: text[random(text.count)] = pick([0xFF, 0xC3, 0x00, 0x7B, 0x22])  // a bad byte
        case 2: text = Array(pick(["[]", "null", "42", "\"ping\"", "{", "}", "{}", "   "]).utf8)
        default: break
        }
        return text.filter { $0 != 10 }  // one request per line
    }
}

extension RequestGenerator: RandomNumberGenerator {
    mutating func next() -> UInt64 { UInt64(random(Int(Int32.max))) << 32 | UInt64(random(Int(Int32.max))) }
}

/// A blocking Unix-socket connection that sends bytes and reads `\n`-terminated lines.
private final class LineSocket {
    private let fd: Int32
    private var pending: [UInt8] = []

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8 + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { close(fd); throw POSIXError(.ECONNREFUSED) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw POSIXError(.EPIPE) }
            offset += sent
        }
    }

    func readLine() throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let end = pending.firstIndex(of: 10) {
                defer { pending.removeFirst(end + 1) }
                return Array(pending[..<end])
            }
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { throw POSIXError(.ECONNRESET) }
            pending += buffer.prefix(count)
        }
    }
}
