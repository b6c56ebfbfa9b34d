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
        subcommands: [Status.self, Fetch.self, History.self, Wake.self, CheckConfig.self, Ping.self],
        defaultSubcommand: Status.self)
}

/// Options every command that talks to the daemon shares.
struct ConnectionOptions: ParsableArguments {
    @Option(name: .long, help: "Control socket (default: $FETCHD_SOCKET or \(Defaults.runtimeDirectory)/\(Defaults.socketFileName)).")
    var socket: String?

    @Flag(name: .long, help: "Print JSON for scripts instead of a table.")
    var json = false

    /// The socket path to use.
    var socketPath: String {
        socket ?? ProcessInfo.processInfo.environment["FETCHD_SOCKET"]
            ?? "\(Defaults.runtimeDirectory)/\(Defaults.socketFileName)"
    }

    /// Sends `request` and returns the answer, or exits with a clear message.
    func send(_ request: ControlRequest, timeoutSeconds: Int = 30) throws -> ControlResponse {
        let response: ControlResponse
        do {
            response = try ControlClient(path: socketPath, timeoutSeconds: timeoutSeconds).send(request)
        } catch {
            throw CleanExit.failure("fetchctl: \(error.message)")
        }
        if !response.ok, let error = response.error {
            throw CleanExit.failure("fetchctl: \(error.message) [\(error.code.rawValue)]")
        }
        return response
    }

    /// Prints `value` as JSON.
    func printJSON(_ value: some Encodable) throws {
        let encoder = ControlProtocol.encoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}

/// Ends the program with a message on stderr and exit status 1.
enum CleanExit {
    static func failure(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        return ExitCode(1)
    }
}

struct Ping: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check that fetchd answers.")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let pong = try connection.send(ControlRequest(command: .ping)).pong
        if connection.json { try connection.printJSON(pong) } else if let pong {
            print("fetchd \(pong.daemonVersion) (pid \(pong.pid)) is running")
        }
    }
}

struct Wake: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask fetchd to run its due handlers now (what the wake timer does).")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        _ = try connection.send(ControlRequest(command: .wake))
        if !connection.json { print("fetchd: wake requested") }
    }
}

struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config", abstract: "Check a config file (main or handler file) without a daemon.")
    @Argument(help: "The file to check (default \(Defaults.configFile)).")
    var file: String = Defaults.configFile
    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() throws {
        let problems = ConfigLoader.check(path: file)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(problems), as: UTF8.self))
        } else {
            problems.forEach { print($0.description) }
            print(problems.isEmpty ? "\(file): OK" : "\(problems.count) problem(s) found")
        }
        if !problems.isEmpty { throw ExitCode(1) }
    }
}
