import ArgumentParser
import FetchdControl
import FetchdCore
import Foundation

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
            throw CleanExit.failure("fetchctl: \(TerminalText.visible(error.message)) [\(error.code.rawValue)]")
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
