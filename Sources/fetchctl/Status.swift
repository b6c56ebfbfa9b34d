import ArgumentParser
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl status`: every handler at a glance; `fetchctl status NAME`: one handler, and why it
/// is not fetched now.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show every handler: last result, next fetch, snapshot; or one handler and why it is not fetched now.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "A handler: show its latest attempts, when it is next eligible and every reason it is not fetched now.")
    var handler: String?
    @Flag(name: .long, help: "Do not reset the new-data counters.")
    var peek = false

    func run() throws {
        if let handler {
            guard let status = try connection.send(ControlRequest(command: .status, handler: handler)).status else { return }
            if connection.json { return try connection.printJSON(status) }
            status.handlers.forEach { Self.printDetails(of: $0) }
            return
        }
        guard let status = try connection.send(ControlRequest(command: .status, markSeen: !peek)).status else { return }
        if connection.json { return try connection.printJSON(status) }
        print("fetchd \(status.daemonVersion), up since \(TimeText.local(status.startedAt)), config \(status.configFile ?? "(defaults)")")
        var rows = [["HANDLER", "KIND", "LAST RESULT", "WHEN", "LAST SUCCESS", "NEXT", "NEW", "SNAPSHOT"]]
        for handler in status.handlers {
            var result = handler.running ? "running" : (handler.lastResult ?? "-")
            if let reason = handler.lastReason, handler.lastResult == "failed" { result += " (\(reason.prefix(40)))" }
            rows.append([
                handler.name + (handler.enabled ? "" : " (disabled)"), handler.kind, result,
                TimeText.relative(handler.lastAttemptAt), TimeText.relative(handler.lastSuccessAt),
                handler.nextEligibleAt.map { TimeText.relative($0) } ?? "on request",
                String(handler.newDataSinceLastLook), handler.snapshotPath ?? "-",
            ])
        }
        if status.handlers.isEmpty && status.configProblems.isEmpty {
            print(Self.noHandlers(in: status.handlersDirectory))
        } else if status.handlers.isEmpty {
            print("no handler is loaded: every handler has a problem (below)")
        } else {
            TimeText.printTable(rows)
        }
        let planned = status.handlers.filter { $0.planReason != nil }
        if !planned.isEmpty {
            print("\nplanned from usage:")
            planned.forEach { print("  \($0.name): \(TerminalText.visible($0.planReason ?? ""))") }
        }
        let waiting = status.handlers.filter { $0.waitingFor != nil }
        if !waiting.isEmpty {
            print("\nwaiting for their conditions (fetchctl fetch still runs them):")
            waiting.forEach { print("  \($0.name): \(TerminalText.visible($0.waitingFor ?? ""))") }
        }
        let transfers = status.handlers.filter { $0.transfer != nil }
        if !transfers.isEmpty {
            print("\ntransfers (fetchctl transfers for more):")
            for handler in transfers {
                guard let transfer = handler.transfer else { continue }
                let rate = transfer.bytesPerSecond.map { ", \(Transfers.bytes($0))/s" } ?? ""
                let left = transfer.etaSeconds.map { ", \(Transfers.duration($0)) left" } ?? ""
                print("  \(handler.name): \(Transfers.state(of: handler)), \(Transfers.progress(transfer))\(rate)\(left)")
            }
        }
        let pushes = status.handlers.filter { $0.pendingPushAt != nil }
        if !pushes.isEmpty {
            print("\npushes held by push_limit (coalesced into one fetch each):")
            for handler in pushes {
                let count = handler.pendingPushes ?? 1
                print("  \(handler.name): one fetch \(TimeText.relative(handler.pendingPushAt)) (\(TimeText.local(handler.pendingPushAt ?? Date()))), \(count) push\(count == 1 ? "" : "es"), push_limit \(handler.pushLimit ?? "?")")
            }
        }
        if let listener = status.pushListener { print("\npush listener: http://\(listener)/push/NAME") }
        if let isolation = status.programIsolation { print(TerminalText.visible("\nwarning: \(isolation)")) }
        if !status.configProblems.isEmpty {
            print("\nconfig problems:")
            status.configProblems.forEach { problem in
                let location = problem.file + (problem.line.map { ":\($0)" } ?? "")
                print(TerminalText.visible("  \(location): \(problem.key.map { "key \"\($0)\": " } ?? "")\(problem.message)"))
            }
        }
    }

    /// What to do when nothing is configured: where handler files go, and where the shipped
    /// examples are (installed beside fetchctl, `make install`).
    static func noHandlers(in directory: String?) -> String {
        var text = "no handlers configured: add a handler file (*.toml) to "
            + "\(directory ?? "the handlers.d folder beside the config file"), then run 'systemctl reload fetchd' "
            + "('systemctl --user reload fetchd' for a user service)"
        let binary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let prefix = URL(fileURLWithPath: binary).deletingLastPathComponent().deletingLastPathComponent()
        let examples = prefix.appendingPathComponent("share/doc/fetchd/examples").path
        if FileManager.default.fileExists(atPath: examples) { text += "\nexamples to copy: \(examples)" }
        return text
    }
}
