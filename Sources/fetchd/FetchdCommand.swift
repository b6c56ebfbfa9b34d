import ArgumentParser
import FetchdConfig
import FetchdCore
import FetchdDaemon
import Foundation
import Logging

/// `fetchd`: the background-fetch daemon's entry point. Parses flags, loads the configuration
/// and hands over to `Daemon`.
@main
struct FetchdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetchd",
        abstract: "Background-fetch daemon: runs registered fetch handlers at the right moments.",
        version: Defaults.version)

    @Option(name: .long, help: "Main configuration file (default \(Defaults.configFile)).")
    var config: String?

    @Flag(name: .long, help: "Check the configuration, print every problem, and exit (non-zero if any).")
    var checkConfig = false

    @Flag(name: .long, help: "Run the due handlers once and exit.")
    var once = false

    @Option(name: .long, help: "Override cache_dir.")
    var cacheDir: String?

    @Option(name: .long, help: "Override state_dir.")
    var stateDir: String?

    @Option(name: .long, help: "Override runtime_dir.")
    var runtimeDir: String?

    @Option(name: .long, help: "Override the control socket path.")
    var socket: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    func run() async throws {
        let mainFile = config ?? Defaults.configFile
        if checkConfig {
            let problems = ConfigLoader.check(path: mainFile)
            problems.forEach { print($0.description) }
            print(problems.isEmpty ? "\(mainFile): OK" : "\(problems.count) problem(s) found")
            throw ExitCode(problems.isEmpty ? 0 : 1)
        }
        var loaded: LoadedConfig
        do {
            loaded = try ConfigLoader.load(mainFile: mainFile, requireMainFile: config != nil)
        } catch {
            FileHandle.standardError.write(Data("fetchd: cannot start: \(error.description)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG
        }
        if let cacheDir { loaded.daemon.cacheDirectory = cacheDir }
        if let stateDir { loaded.daemon.stateDirectory = stateDir }
        if let runtimeDir { loaded.daemon.runtimeDirectory = runtimeDir }
        if let socket { loaded.daemon.socketPathOverride = socket }

        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let daemon = Daemon(config: loaded, logger: Logger(label: "fetchd"))
        if once {
            let failures = try await daemon.runOnce()
            throw ExitCode(failures == 0 ? 0 : 1)
        }
        try await daemon.run()
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
