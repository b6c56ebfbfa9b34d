import ArgumentParser
import FetchdConfig
import FetchdControl
import FetchdControlServer
import FetchdCore
import FetchdDaemon
import FetchdSnapshots
import FetchdSystemd
import Foundation
import Logging

/// `fetchd`'s command line: parses flags, loads the configuration and hands over to `Daemon`
/// (started by `FetchdMain`).
struct FetchdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetchd",
        abstract: "Background-fetch daemon: runs registered fetch handlers at the right moments.",
        version: Defaults.version)

    @Option(name: .long, help: "Main configuration file (default \(Defaults.configFile)).")
    var config: String?

    @Flag(name: .long, help: "Check the configuration, print every problem, and exit (1 if any, 78 if fetchd would not start).")
    var checkConfig = false

    @Flag(name: .long, help: "With --config: a missing file means all defaults (user services).")
    var missingConfigOK = false

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

    @Option(name: .long, help: "Start handler programs through fetchd-runas at this socket, not as fetchd (the system service).")
    var runasSocket: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Option(name: .long, help: .hidden)
    var debugStallAfter: Double?

    func run() async throws {
        let mainFile = config ?? Defaults.configFile
        if checkConfig {
            // The same check, words and exit status as `fetchctl check-config`; a missing default
            // file means the defaults, as at start.
            let examination = ConfigLoader.examine(path: mainFile, requireMainFile: config != nil && !missingConfigOK)
            examination.lines(checked: mainFile).forEach { print($0) }
            throw ExitCode(examination.exitStatus)
        }
        // The same loading, with the same overrides, at start and at every reload.
        let load: @Sendable () throws(ConfigLoadError) -> LoadedConfig = { [config, missingConfigOK, cacheDir, stateDir, runtimeDir, socket, runasSocket] () throws(ConfigLoadError) -> LoadedConfig in
            var loaded = try ConfigLoader.load(mainFile: mainFile, requireMainFile: config != nil && !missingConfigOK)
            if let cacheDir { loaded.daemon.cacheDirectory = cacheDir }
            if let stateDir { loaded.daemon.stateDirectory = stateDir }
            if let runtimeDir { loaded.daemon.runtimeDirectory = runtimeDir }
            if let socket { loaded.daemon.socketPathOverride = socket }
            if let runasSocket { loaded.daemon.runasSocket = runasSocket }
            return loaded
        }
        LogDestination.bootstrap(level: logLevel)
        let logger = Logger(label: "fetchd")
        let loaded: LoadedConfig
        do {
            loaded = try load()
        } catch {
            for problem in error.diagnostics {
                logger.critical("cannot start: \(problem.description)", metadata: problem.journalMetadata)
            }
            let problems = error.diagnostics.map { "  \($0.description)" }.joined(separator: "\n")
            Self.answerWaitingClients(.configInvalid, "fetchd cannot start: its configuration has problems:\n\(problems)\n"
                + "Fix them (fetchctl check-config FILE), then: systemctl start fetchd (systemctl --user for a user service)",
                logger: logger)
            throw ExitCode(78)  // EX_CONFIG: systemd does not restart a unit for a bad config forever
        }
        var daemon = Daemon(config: loaded, logger: logger, reload: load)
        daemon.debugStallAfter = debugStallAfter.map { Duration.milliseconds(Int64($0 * 1000)) }
        do {
            if once {
                let report = try await daemon.runOnce()
                print(report.summary)
                print(report.threadSummary)
                throw ExitCode(report.tally.failures == 0 && report.unrecorded == 0 ? 0 : 1)
            }
            try await daemon.run()
        } catch let busy as CacheLock.Busy {
            // Said once: the logger writes to stderr, or to the journal under systemd.
            logger.critical("cannot start: \(busy)")
            Self.answerWaitingClients(.internalError, "fetchd cannot start: \(busy)", logger: logger)
            // EX_TEMPFAIL: not a failed fetch (1) nor a bad config (78); systemd retries later.
            throw ExitCode(75)
        } catch let exit as ExitCode {
            throw exit
        } catch {
            // Before the control socket was adopted (a missing control_group, an unwritable
            // state folder): the clients that started fetchd learn why.
            Self.answerWaitingClients(.internalError, "fetchd cannot start: \(error)", logger: logger)
            throw error
        }
    }

    /// Started by a connection to fetchd.socket and about to exit before serving it: answers it
    /// (and any other waiting) with `message`, or systemd would start fetchd again at once for
    /// it, until the start limit fails the socket too. Nothing once the socket is in use.
    static func answerWaitingClients(_ code: ControlError.Code, _ message: String, logger: Logger) {
        guard let socket = SocketActivation.takeListeningSocket() else { return }
        let answered = PendingConnections.answerAll(on: socket, with: .failure(code, message))
        logger.notice("answered \(answered) waiting control connection(s) with why fetchd cannot start")
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
