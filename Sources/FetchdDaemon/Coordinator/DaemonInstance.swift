import Foundation

/// This daemon process, as `fetchctl status` shows it and as the owner of the pushes it admits.
struct DaemonInstance {
    /// Names this process as the owner of the pushes it admitted to fetch at once: a pending
    /// push owned by another was left by a daemon that stopped before fetching it.
    let id = UUID().uuidString.lowercased()
    /// When the coordinator was made.
    let startedAt = Date()
    /// The push listener's bound address, once it listens.
    var pushListenerAddress: String?
}
