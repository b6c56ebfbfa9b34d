import CPosixShim
import FetchdConfig
import FetchdCore
import FetchdHandlers
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// fetchd-runas's one job: answer one request on one connection (systemd starts an instance per
/// connection, `Accept=yes`). Checks who asks, reads the request, plans it from the root-owned
/// configuration, runs the program as the plan's user in a folder of its own, and answers with
/// the result and the program's checked output. A stop message, or the connection closing,
/// stops the program (SIGTERM, then SIGKILL after the kill grace).
public struct RunasService: Sendable {
    /// The main configuration file (its handler files are read from it, as fetchd does).
    public let configPath: String
    /// Who programs of handlers without `user` run as; nil: such requests are refused.
    public let defaultUser: String?
    /// The uids allowed to ask (fetchd's user; root).
    public let allowedUIDs: Set<UInt32>
    /// Where the per-run folder is made (the unit's private /tmp).
    public var workRoot = "/tmp"

    /// How long the request may take to come after the connection.
    static let requestTimeoutSeconds = 10

    /// Creates the service.
    public init(configPath: String, defaultUser: String?, allowedUIDs: Set<UInt32>) {
        self.configPath = configPath
        self.defaultUser = defaultUser
        self.allowedUIDs = allowedUIDs
    }

    /// Serves the request on `connection`; returns the line to log.
    public func serve(_ connection: RunasConnection) async -> String {
        let request: RunasRequest
        let plan: RunasPlan
        do {
            request = try receiveRequest(on: connection)
            plan = try RunasPlan.make(for: request, configPath: configPath, defaultUser: defaultUser, askers: allowedUIDs)
        } catch {
            try? connection.send(RunasReply(result: .refused, reason: "\(error)"))
            return "refused: \(error)"
        }
        let ran = await run(plan, request: request, stoppedBy: connection)
        defer { RunasWorkspace.remove(ran.workspace, user: plan.user) }
        var answer = ran.reply
        var output: Int32 = -1
        if answer.result == .newData, request.program == .command {
            output = open(ran.outputPath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            if output < 0 {
                answer = RunasReply(result: .failed, reason: "cannot open the output's copy: \(String(cString: strerror(errno)))")
            }
        }
        defer { if output >= 0 { close(output) } }
        let summary = "\(request.handler) (\(request.program.rawValue)) as \(plan.user.name): \(answer.result.rawValue)"
            + (answer.reason.map { ": \($0)" } ?? "")
        do { try connection.send(answer, passing: output) } catch {
            return summary + "; fetchd did not take the answer: \(error)"
        }
        return summary
    }

    /// The request, once the peer is one of `allowedUIDs` and the message holds only known fields.
    private func receiveRequest(on connection: RunasConnection) throws(RunasPlan.Refusal) -> RunasRequest {
        let peer = fetchd_peer_uid(connection.descriptor)
        guard peer >= 0, allowedUIDs.contains(UInt32(truncatingIfNeeded: peer)) else {
            throw RunasPlan.Refusal(description: "uid \(peer) may not ask fetchd-runas for anything (only fetchd's user)")
        }
        // A peer that connects and says nothing must not hold a root instance (and one of the
        // socket's 64 connections) for ever.
        var timeout = timeval(tv_sec: Self.requestTimeoutSeconds, tv_usec: 0)
        setsockopt(connection.descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let message: RunasConnection.Message?
        do { message = try connection.receive(limit: RunasRequest.maxBytes, wait: true) } catch {
            throw RunasPlan.Refusal(description: "no request: \(error)")
        }
        guard let message else { throw RunasPlan.Refusal(description: "no request") }
        if message.descriptor >= 0 { close(message.descriptor) }
        guard let object = try? JSONSerialization.jsonObject(with: message.bytes) as? [String: Any] else {
            throw RunasPlan.Refusal(description: "the request is not a JSON object")
        }
        let unknown = Set(object.keys).subtracting(RunasRequest.fields)
        guard unknown.isEmpty else {
            throw RunasPlan.Refusal(description: "unknown field(s) \(unknown.sorted().joined(separator: ", ")): a request "
                + "names a handler and its program, never a command or a user")
        }
        do { return try JSONDecoder().decode(RunasRequest.self, from: message.bytes) } catch {
            throw RunasPlan.Refusal(description: "the request is not valid: \(error)")
        }
    }
}
