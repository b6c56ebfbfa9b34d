import ArgumentParser
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl push NAME [--data JSON]`: a push wake, like iOS's silent `content-available` push.
struct Push: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wake a handler with a push: fetch it now with the push's data, within its push_limit.",
        discussion: """
            The data (a JSON text of at most \(Defaults.pushDataMaxBytes) bytes) reaches an exec handler as \
            FETCHD_PUSH_DATA. Pushes over the handler's push_limit are coalesced into one fetch at the \
            earliest time the limit allows, with the newest data.
            """)
    @Argument(help: "The handler.")
    var handler: String
    @Option(name: .long, help: "The push's data: a JSON text, e.g. '{\"id\": 42}'.")
    var data: String?
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        guard let report = try connection.send(ControlRequest(command: .push, handler: handler, data: data)).push else { return }
        if connection.json { return try connection.printJSON(report) }
        print("\(handler): \(TerminalText.visible(report.message))")
    }
}
