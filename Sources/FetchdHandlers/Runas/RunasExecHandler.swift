import FetchdCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs a handler's program through fetchd-runas, the privileged part of the system service:
/// fetchd names the handler and the program (`command`, `on_complete` or `on_failure`), fetchd-runas starts
/// what the root-owned configuration says as the user it says, and answers with the result and
/// the output as an open file, which is copied into fetchd's staging file here. So fetchd runs
/// unprivileged and its programs as other users (fetchd-runas(8)).
///
/// The deadline is fetchd's: when the runner cancels this fetch, fetchd-runas is told to stop
/// (SIGTERM, then SIGKILL after the kill grace) and its answer awaited, for at most the grace
/// and a margin; closing the connection stops the program too.
public struct RunasExecHandler: FetchHandler {
    /// fetchd-runas's socket.
    public let socketPath: String
    /// Which of the handler's programs.
    public let program: RunasRequest.Program
    /// For `on_complete`: the published file.
    public var snapshot: String?
    /// For `on_failure`: the alert's data.
    public var alert: FailureAlert?
    /// fetchd-runas's grace between SIGTERM and SIGKILL, for how long a stopped run is awaited.
    public let killGrace: Duration

    /// How often the answer is looked for.
    static let pollInterval: Duration = .milliseconds(10)
    /// Waited beyond the kill grace for the answer of a stopped run.
    static let stopMargin: Duration = .seconds(5)

    /// Creates the handler.
    public init(socketPath: String, program: RunasRequest.Program, killGrace: Duration) {
        self.socketPath = socketPath
        self.program = program
        self.killGrace = killGrace
    }

    /// Asks fetchd-runas to run the program and completes `context` from its answer.
    public func performFetch(context: FetchContext) async {
        var request = RunasRequest(handler: context.handlerName, program: program, trigger: context.trigger,
                                   seconds: Self.seconds(context.timeRemaining),
                                   wallDeadline: Int(context.wallDeadline.timeIntervalSince1970))
        request.pushData = context.pushData
        request.snapshot = snapshot
        request.failureAlert = alert
        let message: RunasConnection.Message
        do {
            let connection = try RunasConnection(connectingTo: socketPath)
            try connection.send(request)
            guard let answer = try await answer(on: connection) else { return }
            message = answer
        } catch {
            guard !context.isExpired else { return }
            context.complete(.failed(reason: "\(error)"))
            return
        }
        defer { if message.descriptor >= 0 { close(message.descriptor) } }
        guard let reply = try? JSONDecoder().decode(RunasReply.self, from: message.bytes) else {
            context.complete(.failed(reason: "fetchd-runas answered something that is not a reply"))
            return
        }
        complete(context, with: reply, output: message.descriptor)
    }

    /// The answer; nil when this fetch was stopped and fetchd-runas did not answer in time
    /// (closing the connection then stops the program).
    private func answer(on connection: RunasConnection) async throws(RunasConnection.Failure) -> RunasConnection.Message? {
        var stopped: ContinuousClock.Instant?
        while true {
            if let message = try connection.receive(limit: RunasReply.maxBytes, wait: false) { return message }
            if Task.isCancelled {
                if let stopped {
                    if ContinuousClock.now - stopped > killGrace + Self.stopMargin { return nil }
                } else {
                    try connection.send(RunasStop())
                    stopped = .now
                }
            }
            await ProcessGroupReaper.sleepIgnoringCancellation(Self.pollInterval)
        }
    }

    /// `duration` in seconds, fractions kept.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private func complete(_ context: FetchContext, with reply: RunasReply, output: Int32) {
        guard !context.isExpired else { return }
        switch reply.result {
        case .newData:
            guard program == .command else {
                context.complete(.newData())
                return
            }
            guard output >= 0, let bytes = reply.outputBytes else {
                context.complete(.failed(reason: "fetchd-runas reported newData without the output"))
                return
            }
            switch UserOutput.copy(output, bytes: bytes, to: context.outputPath) {
            case .copied(let digest):
                context.reportContentDigest(digest)
                context.complete(.newData())
            case .refused(let reason): context.complete(.failed(reason: reason))
            case .nothing: context.complete(.failed(reason: "exited 0 (newData) but wrote nothing to FETCHD_OUTPUT"))
            }
        case .noData: context.complete(.noData())
        case .failed: context.complete(.failed(reason: reply.reason ?? "failed"))
        case .expired:
            // The deadlines are the same: fetchd's own expires the fetch (an expired result, not
            // a failure), a moment before or after this answer.
            break
        case .refused: context.complete(.failed(reason: "fetchd-runas refused to run it: \(reply.reason ?? "no reason given")"))
        }
    }
}
