import ArgumentParser
import FetchdConfig
import FetchdControl
import FetchdCore
import Foundation

/// `fetchctl`: looks inside a running fetchd through its control socket.
@main
struct FetchctlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetchctl",
        abstract: "Inspect and drive the fetchd background-fetch daemon.",
        version: Defaults.version,
        subcommands: [Status.self, Fetch.self, Push.self, Transfers.self, History.self, Wake.self, Reload.self, Used.self, Usage.self, CheckConfig.self, Simulate.self, Ping.self],
        defaultSubcommand: Status.self)

    /// Parses the arguments with the common options allowed before the command too
    /// (`CommonOptionOrder`), then runs the command.
    static func main() {
        let commands = Set(configuration.subcommands.map { $0._commandName })
        let arguments = CommonOptionOrder.reordered(Array(CommandLine.arguments.dropFirst()), commands: commands,
                                                    defaultCommand: Status._commandName)
        main(arguments)
    }
}

/// Ends the program with a message on stderr and exit status 1.
enum CleanExit {
    static func failure(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        return ExitCode(1)
    }
}

