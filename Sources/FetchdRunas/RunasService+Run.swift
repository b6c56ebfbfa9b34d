import FetchdConfig
import FetchdCore
import FetchdHandlers
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension RunasService {
    /// A finished run: the answer, and the workspace to remove once it is sent.
    struct Ran {
        /// What fetchd is told.
        var reply: RunasReply
        /// The run's folder, nil when none was made.
        var workspace: RunasWorkspace?
        /// The checked copy of the program's output (meaningful with `newData`).
        var outputPath: String { workspace?.copy ?? "/nonexistent" }
    }

    /// Runs `plan`'s program as its user, through the same exec-handler code fetchd uses (the
    /// result contract, the output checks, the kill at the deadline), stopping it when fetchd
    /// says so on `connection` or goes away.
    func run(_ plan: RunasPlan, request: RunasRequest, stoppedBy connection: RunasConnection) async -> Ran {
        let workspace: RunasWorkspace
        do { workspace = try RunasWorkspace.make(in: workRoot, for: plan.user) } catch {
            return Ran(reply: RunasReply(result: .failed, reason: "\(error)"), workspace: nil)
        }
        var program = HandlerFactory.makeExec(plan.handler, command: plan.command, daemon: plan.daemon)
        program.user = plan.user
        let onComplete = request.program == .onComplete
        let writes = request.program == .command
        if !writes {
            // The plan checked the alert's fields; only on_failure carries them.
            program.runsBeside(snapshot: onComplete ? plan.command.last : nil,
                               alert: request.program == .onFailure ? request.failureAlert : nil)
        }
        let context = FetchContext(
            handlerName: plan.handler.name, trigger: request.trigger,
            outputPath: writes ? workspace.copy : "/dev/null",
            previousSnapshotPath: onComplete ? plan.command.last : writes ? previousCopy(plan, in: workspace) : nil,
            deadline: .now + .milliseconds(Int64(plan.seconds * 1000)),
            wallDeadline: Date(timeIntervalSince1970: Double(request.wallDeadline)),
            pushData: request.pushData, userOutputPath: writes ? workspace.userOutput : nil)
        let running = Task { [program] in await FetchRunner().run(program, context: context) }
        // The stop watcher waits without a time limit: the request's was for the request only.
        var forever = timeval(tv_sec: 0, tv_usec: 0)
        setsockopt(connection.descriptor, SOL_SOCKET, SO_RCVTIMEO, &forever, socklen_t(MemoryLayout<timeval>.size))
        let watcher = StopWatcher(connection: connection) { running.cancel() }
        let outcome = await running.value
        watcher.finish()
        return Ran(reply: Self.reply(for: outcome, seconds: plan.seconds), workspace: workspace)
    }

    /// A copy of the handler's newest snapshot in the run's folder (`FETCHD_PREVIOUS`), found
    /// by fetchd-runas itself (`PublishedSnapshot`); nil when there is none or it is over
    /// `max_bytes`.
    private func previousCopy(_ plan: RunasPlan, in workspace: RunasWorkspace) -> String? {
        guard let published = try? PublishedSnapshot.open(handler: plan.handler.name, cache: plan.daemon.cacheDirectory) else {
            return nil
        }
        defer { close(published.descriptor) }
        return published.copy(to: workspace.previous, maxBytes: plan.handler.maxBytes) ? workspace.previous : nil
    }

    /// The answer for how the run went.
    static func reply(for outcome: FetchRunner.Outcome, seconds: Double) -> RunasReply {
        switch outcome.completion {
        case .newData?: RunasReply(result: .newData, outputBytes: outcome.contentDigest?.bytes)
        case .noData?: RunasReply(result: .noData)
        case .failed(let reason, _)?: RunasReply(result: .failed, reason: reason)
        case nil where outcome.interrupted: RunasReply(result: .failed, reason: "stopped: fetchd asked")
        case nil: RunasReply(result: .expired, reason: "ran past its \(HumanDuration.format(seconds: seconds)) and was stopped")
        }
    }
}

/// Waits, on a thread of its own, for fetchd to say stop or to go away, and then calls `stop`
/// once. `finish` ends the wait (shutting the connection's reading side, which wakes the read).
private final class StopWatcher: @unchecked Sendable {
    private let connection: RunasConnection
    private let finished = NSLock()
    private var done = false

    init(connection: RunasConnection, stop: @escaping @Sendable () -> Void) {
        self.connection = connection
        let thread = Thread { [self] in
            // Any message (a stop) or the end of the connection means stop.
            if let message = try? connection.receive(limit: RunasReply.maxBytes, wait: true), message.descriptor >= 0 {
                close(message.descriptor)
            }
            let late = finished.withLock { done }
            if !late { stop() }
        }
        thread.name = "runas-stop"
        thread.start()
    }

    func finish() {
        finished.withLock { done = true }
        shutdown(connection.descriptor, Int32(SHUT_RD))
    }
}
