import FetchdConfig
import FetchdCore
import Foundation

extension FetchCoordinator {
    /// Puts a new configuration in force. Fetches in flight finish under the config they started
    /// with; removed handlers are simply no longer scheduled. The handlers applications
    /// registered are read again under the new daemon settings (a default deadline, the
    /// control group), as at start.
    public func apply(_ newConfig: LoadedConfig) {
        pipeline.resize(from: config.daemon, to: newConfig.daemon)
        install(newConfig.replacingRegistered(with: RegisteredHandlers.load(from: state, daemon: newConfig.daemon, logger: logger)))
        rejectedReload = []
        // Budgets, sources or intervals may have changed: every plan is made again.
        plans.forgetAll()
    }

    /// Puts `newConfig` in force: a reload's, or the same with a registration added or removed.
    /// Removed handlers' entries go, unless a fetch, a wake or a push still counts on them.
    func install(_ newConfig: LoadedConfig) {
        config = newConfig
        let names = Set(config.handlers.map(\.name))  // a set: 10,000 handlers, 10,000 entries
        runtime = runtime.filter { names.contains($0.key) || $0.value.isBusy }
        conditionWaits.keep(only: names)
    }

    /// Records that a reload was rejected; `fetchctl status` and the status line show it.
    public func rejectReload(_ problems: [ConfigDiagnostic]) { rejectedReload = problems }
}
