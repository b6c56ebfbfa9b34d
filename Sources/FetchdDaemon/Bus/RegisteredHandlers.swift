import FetchdConfig
import FetchdControlServer
import FetchdCore
import FetchdState
import Foundation
import Logging

/// The handlers applications registered over D-Bus, between the state database (where each is
/// kept as its options) and the configuration in force (where each is a `HandlerConfig` named
/// `NAME@UID`). Stored registrations are read again at every start with the rules then in
/// force, so a uid that left the control group loses what only the group may register.
struct RegisteredHandlers {
    /// Who `uid` is to the registration rules: root and members of `control_group` are
    /// privileged (the control socket's `PeerPolicy`). The daemon's own uid is not: on the
    /// session bus every application of the user shares it, sandboxed ones included, and must
    /// not reach more than a sandbox allows.
    static func caller(uid: UInt32, daemon: DaemonConfig) -> Registration.Caller {
        PeerPolicy(daemonUID: 0, groupID: daemon.controlGroupID).admits(uid: uid) ? .privileged : .unprivileged
    }

    /// The registrations kept in `state`, as handlers under `daemon`'s rules; one that no
    /// longer passes them is left out and logged (it stays stored, for a later start).
    static func load(from state: StateStore, daemon: DaemonConfig, logger: Logger) -> [HandlerConfig] {
        let stored: [StoredRegistration]
        do { stored = try state.registrations.all() } catch {
            logger.error("cannot read the handlers registered over D-Bus from \(state.path): \(error)")
            return []
        }
        return stored.compactMap { row in
            guard let name = RegisteredName(base: row.name, uid: row.uid),
                  let options = Registration.options(stored: row.options)
            else {
                logger.error("the registration \"\(row.name)\" of uid \(row.uid) in \(state.path) cannot be read; left out")
                return nil
            }
            let registration = Registration(name: name, options: options)
            switch registration.handler(daemon: daemon, caller: caller(uid: row.uid, daemon: daemon)) {
            case .success(let handler): return handler
            case .failure(let refusal):
                logger.error("\(name): registration no longer accepted, left out: \(refusal.message.replacingOccurrences(of: "\n", with: "; "))",
                             metadata: ["handler": "\(name)"])
                return nil
            }
        }
    }
}
