/// The machine's conditions a handler may wait for, as the coordinator last saw them.
struct Conditions {
    /// The power supplies, as last read (`FetchCoordinator.refreshPower()`).
    var power = PowerState()
    /// NetworkManager's view of the network while it is on the system bus; nil: the
    /// `network_metered` setting decides.
    var networkManager: NetworkState?
}
