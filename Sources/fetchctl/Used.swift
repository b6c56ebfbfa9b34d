import ArgumentParser
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl used NAME`: an app reports that its content was just used.
struct Used: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Report that a handler's content was used now (the planner learns when to fetch).")
    @Argument(help: "The handler.")
    var handler: String
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        guard let report = try connection.send(ControlRequest(command: .used, handler: handler)).used else { return }
        if connection.json { return try connection.printJSON(report) }
        if let next = report.nextFetchAt {
            print("\(handler): use recorded; next fetch \(TimeText.relative(next)): \(report.reason ?? "")")
        } else {
            print("\(handler): use recorded (the handler does not learn its usage: set usage = [\"explicit\"])")
        }
    }
}
