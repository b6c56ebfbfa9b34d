import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdPlanner
import FetchdPush
import Foundation

// The narrow views of the coordinator that the services hold: each service sees what it
// needs, and a test can drive it with a fake. `FetchCoordinator` conforms to all of them.

/// Where usage watchers (reads of the cache, logind sessions) report uses.
protocol UseSink: Sendable {
    /// The loaded handlers that learn their usage from `source`.
    func handlerNames(learningFrom source: HandlerConfig.UsageSource) async -> [String]
    /// Whether `name` is running or finished less than `seconds` ago: its own program's reads
    /// of its previous snapshot are not uses.
    func ranRecently(_ name: String, within seconds: Double) async -> Bool
    /// Records a use of `name` durably and plans its next fetch again.
    func recordUse(_ name: String, source: HandlerConfig.UsageSource, at date: Date) async -> FetchCoordinator.UseOutcome
}

/// Where condition watchers (power supplies, NetworkManager) report what they see.
protocol ConditionsSink: Sendable {
    /// Whether any loaded handler needs the network (`ConditionCheck.needsNetwork`).
    func anyHandlerNeedsNetwork() async -> Bool
    /// Reads the power supplies again; returns whether anything changed.
    @discardableResult
    func refreshPower() async -> Bool
    /// Takes NetworkManager's view (nil: it left the bus); returns whether the network as the
    /// scheduler sees it changed.
    @discardableResult
    func setNetworkManagerState(_ state: NetworkState?) async -> Bool
    /// Whether any loaded handler's scheduled fetches wait in power-saver (`power_saver =
    /// "defer"`).
    func anyHandlerDefersInPowerSaver() async -> Bool
    /// Takes power-profiles-daemon's active profile (nil: it is not on the bus); returns whether
    /// power-saver began or ended.
    @discardableResult
    func setPowerProfile(_ profile: String?) async -> Bool
}

/// What the reload service changes and reads back.
protocol ConfigTarget: Sendable {
    /// The configuration in force.
    var config: LoadedConfig { get async }
    /// Puts a new configuration in force.
    func apply(_ newConfig: LoadedConfig) async
    /// Records that a reload was rejected.
    func rejectReload(_ problems: [ConfigDiagnostic]) async
    /// The one-line status for systemd.
    func statusLine(now: Date) async -> String
}

/// Answers only when the coordinator is free: the watchdog's proof that the loop is not stuck.
protocol Heartbeat: Sendable {
    /// Returns as soon as the coordinator is free.
    func heartbeat() async
}

/// Where pushes are admitted (`PushIntake`).
protocol PushQueue: Sendable {
    /// Applies `name`'s `push_limit` to a push arriving at `now`, durably.
    func admitPush(_ name: String, data: String?, now: Date) async throws(PushRefusal) -> AdmittedPush
    /// The bearer token the push listener accepts for `name`.
    func pushToken(of name: String) async -> String?
    /// Records where the push listener listens, once it is bound.
    func setPushListenerAddress(_ address: String?) async
}

extension FetchCoordinator: UseSink, ConditionsSink, ConfigTarget, Heartbeat, PushQueue {
    /// The loaded handlers whose `usage` lists `source`.
    func handlerNames(learningFrom source: HandlerConfig.UsageSource) -> [String] {
        config.handlers.filter { $0.usage.contains(source) }.map(\.name)
    }

    /// Whether any loaded handler needs the network (`ConditionCheck.needsNetwork`).
    func anyHandlerNeedsNetwork() -> Bool {
        config.handlers.contains { ConditionCheck.needsNetwork($0) }
    }

    /// Whether any loaded handler's scheduled fetches wait in power-saver.
    func anyHandlerDefersInPowerSaver() -> Bool {
        config.handlers.contains { $0.powerSaver == .deferFetch }
    }
}
