import ArgumentParser
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl history NAME`: a handler's recent results.
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
