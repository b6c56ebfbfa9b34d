import ArgumentParser
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl fetch NAME`: run a handler now.
struct Fetch: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run a handler now (like Xcode's Simulate Background Fetch).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The handler's name.") var name: String
    @Flag(name: .long, help: "Wait for the result and print it; exit 1 if the fetch failed or expired.")
    var wait = false

    func run() throws {
        // A waited fetch may queue behind max_concurrent and then run up to its deadline: no limit.
        let timeout = wait ? 0 : 30
        guard let report = try connection.send(ControlRequest(command: .fetch, handler: name, wait: wait),
                                               timeoutSeconds: timeout).fetch else { return }
        if connection.json { try connection.printJSON(report) } else if let result = report.result {
            let reason = report.reason.map { ": \(TerminalText.visible($0))" } ?? ""
            print("\(name): \(result)\(reason) in \(report.durationMilliseconds ?? 0) ms")
            if let snapshot = report.snapshotPath { print("snapshot: \(snapshot)") }
        } else {
            print(report.joinedRunning ? "\(name): already running" : "\(name): fetch started")
        }
        if let result = report.result, result == "failed" || result == "expired" { throw ExitCode(1) }
    }
}
