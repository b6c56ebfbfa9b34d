import ArgumentParser
import FetchdConfig
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl wake`: what the wake timers run.
struct Wake: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask fetchd to run its due handlers now (what the wake timer does).")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        _ = try connection.send(ControlRequest(command: .wake))
        if !connection.json { print("fetchd: wake requested") }
    }
}
