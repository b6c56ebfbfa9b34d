import FetchdConfig

/// The machine's conditions a handler may wait for, as the coordinator last saw them.
struct Conditions {
    /// The power supplies, as last read (`FetchCoordinator.refreshPower()`).
    var power = PowerState()
    /// NetworkManager's view of the network while it is on the system bus; nil: the
    /// `network_metered` setting decides.
    var networkManager: NetworkState?
    /// power-profiles-daemon's `ActiveProfile` while it is on the system bus ("power-saver",
    /// "balanced", "performance"); nil without it.
    var powerProfile: String?

    /// Whether the active power profile is power-saver.
    var powerSaver: Bool { powerProfile == "power-saver" }

    /// The network as the scheduler sees it: NetworkManager's view while it is on the system
    /// bus, else the `network_metered` setting (and online).
    func network(meteredSetting: Bool) -> NetworkState { networkManager ?? .setting(metered: meteredSetting) }

    /// Why `handler`'s scheduled fetch waits now; nil when its conditions hold.
    func unmet(_ handler: HandlerConfig, meteredSetting: Bool) -> String? {
        ConditionCheck.unmet(handler, power: power, network: network(meteredSetting: meteredSetting))
    }
}
