import FetchdConfig
import FetchdCore
import Foundation

extension FetchCoordinator {
    /// Puts a new configuration in force. Fetches in flight finish under the config they started
    /// with; removed handlers are simply no longer scheduled.
    public func apply(_ newConfig: LoadedConfig) {
        pipeline.resize(from: config.daemon, to: newConfig.daemon)
        config = newConfig.replacingRegistered(with: registered)
        rejectedReload = []
        // Budgets, sources or intervals may have changed: every plan is made again. Removed
        // handlers' entries go, unless a fetch, a wake or a push still counts on them.
        plans.forgetAll()
        let names = Set(config.handlers.map(\.name))  // a set: 10,000 handlers, 10,000 entries
        runtime = runtime.filter { names.contains($0.key) || $0.value.isBusy }
        conditionWaits.keep(only: names)
    }

    /// Records that a reload was rejected; `fetchctl status` and the status line show it.
    public func rejectReload(_ problems: [ConfigDiagnostic]) { rejectedReload = problems }
}
