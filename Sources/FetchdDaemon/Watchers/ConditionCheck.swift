import FetchdConfig
import Foundation

/// Whether a handler's conditions (`network`, `power`, `battery_min`) hold, and if not, why it
/// waits. Pure, so it is tested without a battery or a NetworkManager.
///
/// A scheduled fetch whose conditions do not hold is deferred: it stays due and runs at the
/// first wake after they hold again. Fetches asked for (`fetchctl fetch`, pushes) run regardless.
public enum ConditionCheck {
    /// Why `handler` waits, e.g. "waiting for AC power"; nil when its conditions hold.
    public static func unmet(_ handler: HandlerConfig, power: PowerState, network: NetworkState) -> String? {
        var reasons: [String] = []
        if needsNetwork(handler), !network.online {
            reasons.append(network.source == .networkManager ? "offline (NetworkManager: no connectivity)" : "offline")
        } else if handler.network == .unmetered, network.metered {
            reasons.append("waiting for an unmetered network (\(network.meteredText))")
        }
        if handler.power == .ac, !power.onAC {
            reasons.append("waiting for AC power")
        } else if handler.batteryMinPercent > 0, !power.onAC, let percent = power.batteryPercent,
                  percent < handler.batteryMinPercent {
            // On AC the battery is not drained by the fetch, so its charge does not matter then.
            reasons.append("waiting for battery >= \(handler.batteryMinPercent) % (now \(percent) %)")
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }

    /// Whether `handler` needs the network: http and transfer handlers (but not for `file://` URLs or a
    /// loopback host, which work offline) and handlers that ask for an unmetered one.
    public static func needsNetwork(_ handler: HandlerConfig) -> Bool {
        if handler.network == .unmetered { return true }
        guard let url = handler.request?.url else { return false }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme != "file" else { return scheme(of: url) != "file" }
        let host = (components.host ?? "").lowercased()
        return !(host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127."))
    }

    private static func scheme(of url: String) -> String {
        String(url.prefix { $0 != ":" }).lowercased()
    }
}
