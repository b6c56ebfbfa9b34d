import FetchdConfig
import FetchdCore
import FetchdHandlers
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What fetchd-runas will run for one request, decided from the root-owned configuration alone:
/// the handler's program and arguments, its environment, the user it runs as and how long it
/// may take. The request only chooses among what is configured; everything it cannot choose
/// (the program, the user) is read here, and everything else it carries is checked.
struct RunasPlan {
    /// Why a request is refused, in words sent back to fetchd and logged.
    struct Refusal: Error, CustomStringConvertible {
        /// E.g. `no handler "x" in /etc/fetchd/fetchd.toml and its handler files`.
        let description: String
    }

    /// The handler as configured.
    let handler: HandlerConfig
    /// The daemon's settings from the same files (the kill grace, the cache folder).
    let daemon: DaemonConfig
    /// The argv, the published file appended for `on_complete`.
    let command: [String]
    /// Who the program runs as.
    let user: UserAccount
    /// How long it may run: the request's time, held to what the configuration allows.
    let seconds: Double

    /// The plan for `request` under the configuration at `configPath`; programs of handlers
    /// without `user` run as `defaultUser` when there is one, and never as one of `askers` (the
    /// uids that may ask fetchd-runas: a program running as one could ask it in turn).
    static func make(for request: RunasRequest, configPath: String, defaultUser: String?,
                     askers: Set<UInt32>) throws(Refusal) -> RunasPlan {
        guard request.version == RunasRequest.currentVersion else {
            throw Refusal(description: "protocol version \(request.version); this fetchd-runas speaks \(RunasRequest.currentVersion) "
                + "(fetchd and fetchd-runas come from different installs?)")
        }
        let loaded: LoadedConfig
        do { loaded = try ConfigLoader.load(mainFile: configPath, requireMainFile: false, readsSecrets: false) } catch {
            throw Refusal(description: "the configuration is not usable: \(error)")
        }
        guard let handler = loaded.handler(named: request.handler), handler.registeredBy == nil else {
            // A handler left out for a problem in its file is named with that problem.
            let problems = loaded.diagnostics.map(\.description)
            throw Refusal(description: "no handler \"\(request.handler)\" in \(configPath) and its handler files"
                + (problems.isEmpty ? "" : " (problems there: \(problems.joined(separator: "; ")))"))
        }
        let user = try account(of: handler, defaultUser: defaultUser)
        guard user.uid != 0, !askers.contains(user.uid) else {
            throw Refusal(description: "handler \"\(handler.name)\" would run as \(user.name) (uid \(user.uid)), who may ask "
                + "fetchd-runas itself: a program never runs as root or as fetchd's user; set `user` to another account")
        }
        let (command, limit) = try program(request, of: handler, daemon: loaded.daemon)
        guard request.seconds.isFinite, request.seconds > 0 else {
            throw Refusal(description: "the time given (\(request.seconds) s) is not a positive number of seconds")
        }
        return RunasPlan(handler: handler, daemon: loaded.daemon, command: command, user: user,
                         seconds: min(request.seconds, limit))
    }

    /// The user `handler`'s programs run as: its `user`, else `defaultUser`.
    private static func account(of handler: HandlerConfig, defaultUser: String?) throws(Refusal) -> UserAccount {
        let account: UserAccount
        if let user = handler.user {
            account = user
        } else if let defaultUser {
            guard let found = UserAccount.named(defaultUser) else {
                throw Refusal(description: "no user named \"\(defaultUser)\" (--default-user) on this system; "
                    + "create it (systemd-sysusers) or change the unit")
            }
            account = found
        } else {
            throw Refusal(description: "handler \"\(handler.name)\" has no `user`, and fetchd-runas was started "
                + "without --default-user")
        }
        return account
    }

    /// The argv of the program `request` names, and the most seconds it may run.
    private static func program(_ request: RunasRequest, of handler: HandlerConfig,
                                daemon: DaemonConfig) throws(Refusal) -> ([String], Double) {
        if request.program != .onFailure, request.hasAlertFields {
            throw Refusal(description: "the alert's fields go with on_failure only")
        }
        switch request.program {
        case .command:
            guard let program = handler.program else {
                throw Refusal(description: "handler \"\(handler.name)\" is not an exec handler: it runs no command")
            }
            guard request.snapshot == nil else {
                throw Refusal(description: "`snapshot` goes with on_complete only")
            }
            return (program.command, handler.deadlineSeconds)
        case .onComplete:
            guard let command = handler.transfer?.onComplete else {
                throw Refusal(description: "handler \"\(handler.name)\" has no on_complete")
            }
            return (command + [try newestFile(request.snapshot, of: handler.name, cache: daemon.cacheDirectory)],
                    Defaults.onCompleteTimeoutSeconds)
        case .onFailure:
            guard request.snapshot == nil else {
                throw Refusal(description: "`snapshot` goes with on_complete only")
            }
            guard let alert = request.failureAlert else {
                throw Refusal(description: "on_failure needs the alert's `alert`, `result` and `failures`")
            }
            if let problem = alert.problem { throw Refusal(description: "the alert is not valid: \(problem)") }
            // Resolved as fetchd resolves it: the handler's own, else the main file's.
            guard let command = handler.alertCommand(daemon: daemon) else {
                throw Refusal(description: "handler \"\(handler.name)\" has no on_failure, and the main file sets none")
            }
            return (command, handler.deadlineSeconds)
        }
    }

    /// `path` when it is the handler's newest published file as fetchd-runas finds it
    /// (`PublishedSnapshot`: no link followed but `latest`), the one a transfer's on_complete is
    /// run on; fetchd's word for it is not taken.
    static func newestFile(_ path: String?, of handler: String, cache: String) throws(Refusal) -> String {
        guard let path else { throw Refusal(description: "on_complete needs `snapshot`, the published file") }
        guard let published = try PublishedSnapshot.open(handler: handler, cache: cache) else {
            throw Refusal(description: "handler \"\(handler)\" has published nothing in \(cache)")
        }
        close(published.descriptor)
        guard published.path == path else {
            throw Refusal(description: "`snapshot` (\(path)) is not the handler's newest published file (\(published.path))")
        }
        return path
    }
}
