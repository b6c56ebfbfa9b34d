import ArgumentParser
import FetchdControl
import FetchdCore
import Foundation

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show every handler: last result, next fetch, snapshot.")
    @OptionGroup var connection: ConnectionOptions
    @Flag(name: .long, help: "Do not reset the new-data counters.")
    var peek = false

    func run() throws {
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
        TimeText.printTable(rows)
        if !status.configProblems.isEmpty {
            print("\nconfig problems:")
            status.configProblems.forEach { problem in
                let location = problem.file + (problem.line.map { ":\($0)" } ?? "")
                print("  \(location): \(problem.key.map { "key \"\($0)\": " } ?? "")\(problem.message)")
            }
        }
    }
}

struct Fetch: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run a handler now (like Xcode's Simulate Background Fetch).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The handler's name.") var name: String
    @Flag(name: .long, help: "Wait for the result and print it; exit 1 if the fetch failed.")
    var wait = false

    func run() throws {
        // A fetch may take up to the longest deadline plus the kill grace.
        let timeout = wait ? Int(Defaults.maxDeadlineSeconds + Defaults.killGraceSeconds) + 30 : 30
        guard let report = try connection.send(ControlRequest(command: .fetch, handler: name, wait: wait),
                                               timeoutSeconds: timeout).fetch else { return }
        if connection.json { try connection.printJSON(report) } else if let result = report.result {
            let reason = report.reason.map { ": \($0)" } ?? ""
            print("\(name): \(result)\(reason) in \(report.durationMilliseconds ?? 0) ms")
            if let snapshot = report.snapshotPath { print("snapshot: \(snapshot)") }
        } else {
            print(report.joinedRunning ? "\(name): already running" : "\(name): fetch started")
        }
        if let result = report.result, result == "failed" || result == "expired" { throw ExitCode(1) }
    }
}

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show a handler's recent results, newest first.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The handler's name.") var name: String
    @Option(name: .shortAndLong, help: "How many results.") var limit = Defaults.historyLimit
    @Flag(name: .long, help: "Read the journal instead of asking the daemon (works when it is stopped).")
    var journal = false

    func run() throws {
        let entries = journal ? try JournalHistory.entries(of: name, limit: limit)
            : try connection.send(ControlRequest(command: .history, handler: name, limit: limit)).history ?? []
        if connection.json { return try connection.printJSON(entries) }
        var rows = [["STARTED", "TRIGGER", "RESULT", "DURATION", "BYTES", "VERSION"]]
        for entry in entries {
            rows.append([TimeText.local(entry.startedAt), entry.trigger,
                         entry.result + (entry.reason.map { " (\($0))" } ?? ""), "\(entry.durationMilliseconds) ms",
                         entry.bytes.map(String.init) ?? "-", entry.version ?? "-"])
        }
        TimeText.printTable(rows)
    }
}
