/// What the scheduler knows of the network: whether it is metered and whether the machine is
/// online, and where that came from (for `fetchctl status`).
public struct NetworkState: Sendable, Equatable {
    /// Where the state came from.
    public enum Source: Sendable, Equatable {
        /// NetworkManager's `Metered` and `Connectivity` on the system bus.
        case networkManager
        /// NetworkManager is not on the system bus: the `network_metered` setting, and online.
        case setting
    }

    /// Whether the network is metered (costs money or quota per byte).
    public var metered: Bool
    /// Whether the machine has a network connection at all.
    public var online: Bool
    /// Where the state came from.
    public var source: Source

    /// A state.
    public init(metered: Bool, online: Bool, source: Source) {
        self.metered = metered
        self.online = online
        self.source = source
    }

    /// The state without NetworkManager: `network_metered`, and online (without it fetchd cannot
    /// tell, and a failed fetch says more than a fetch that never runs).
    public static func setting(metered: Bool) -> NetworkState {
        NetworkState(metered: metered, online: true, source: .setting)
    }

    /// From NetworkManager's `Metered` (NMMetered: 1 yes and 3 guess-yes are metered; 2 no,
    /// 4 guess-no and 0 unknown are not) and `Connectivity` (NMConnectivityState: 1 none is
    /// offline; 0 unknown, 2 portal, 3 limited and 4 full are not, since a portal or a limited
    /// network may still reach the handler's server).
    public static func networkManager(metered: Int64?, connectivity: Int64?) -> NetworkState {
        NetworkState(metered: metered == 1 || metered == 3, online: connectivity != 1, source: .networkManager)
    }

    /// Names the source and the state, e.g. "NetworkManager: metered" or "network_metered = true".
    public var meteredText: String {
        switch source {
        case .networkManager: "NetworkManager: \(metered ? "metered" : "not metered")"
        case .setting: "network_metered = \(metered)"
        }
    }
}
