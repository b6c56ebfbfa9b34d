import ArgumentParser
import FetchdCore
import FetchdHandlers
import FetchdRunas
import Foundation

/// `fetchd-runas`: the privileged part of the system service. systemd starts one per connection
/// to fetchd-runas.socket (`Accept=yes`), the connection on stdin; it serves that one request
/// (`RunasService`) and exits. See fetchd-runas(8).
@main
struct FetchdRunasCommand: AsyncParsableCommand {
    /// The name, summary and version `--help` shows.
    static let configuration = CommandConfiguration(
        commandName: "fetchd-runas",
        abstract: "Starts a configured handler program as its user for fetchd (one request on stdin).",
        version: Defaults.version)

    @Option(name: .long, help: "Main configuration file, whose handlers name the programs (default \(Defaults.configFile)).")
    /// The main configuration file.
    var config = Defaults.configFile

    @Option(name: .long, help: "Who programs of handlers without `user` run as (none: such requests are refused).")
    /// Who programs of handlers without `user` run as.
    var defaultUser: String?

    @Option(name: .long, help: "The user allowed to ask, besides root (fetchd's).")
    /// The user allowed to ask besides root.
    var allowUser = "fetchd"

    @Option(name: .long, help: "Where each run's folder is made.")
    /// Where each run's folder is made.
    var workRoot = "/tmp"

    /// Serves the one request on stdin and logs how it went.
    mutating func run() async throws {
        guard geteuid() == 0 else {
            throw ValidationError("fetchd-runas switches users and must run as root; systemd starts it from fetchd-runas.socket")
        }
        var allowed: Set<UInt32> = [0]
        if let account = UserAccount.named(allowUser) { allowed.insert(account.uid) }
        var service = RunasService(configPath: config, defaultUser: defaultUser, allowedUIDs: allowed)
        service.workRoot = workRoot
        let line = await service.serve(RunasConnection(adopting: STDIN_FILENO))
        FileHandle.standardError.write(Data(("fetchd-runas: " + line + "\n").utf8))
    }
}
