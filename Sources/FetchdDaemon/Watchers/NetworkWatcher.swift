import FetchdConfig
import FetchdSystemd
import Foundation
import Logging
import ServiceLifecycle

/// Follows NetworkManager on the system bus (`NetworkManagerSignals`) and hands its view of the
/// network (metered, online) to the coordinator; when it changes, it asks the wake clock for a
/// wake, so a handler deferred for the network runs as soon as it may, without waiting for the
/// heartbeat.
///
/// Connected only while some handler needs the network (`ConditionCheck.needsNetwork`), and
/// following reloads (`refresh()`). Without a system bus or without NetworkManager, the
/// `network_metered` setting decides (and the machine counts as online): a machine without
/// NetworkManager is normal, so this is logged at info level, once per outage; the watcher
/// retries the bus with growing delays and follows NetworkManager coming and going
/// (`BusWatchLoop`). It never ends the daemon.
final class NetworkWatcher: Service, Sendable {
    private let conditions: any ConditionsSink
    private let logger: Logger
    /// Asked for a wake when the conditions change.
    private let wakes: any WakeRequests
    /// Runs the watcher: `run()` and `refresh()` are the loop's (`BusWatching`).
    let loop: BusWatchLoop<NetworkWatcher>

    /// `bus` is the system bus but for tests of the watcher itself.
    init(conditions: any ConditionsSink, logger: Logger, bus: BusConnection.Bus = .system, wakes: any WakeRequests) {
        self.conditions = conditions
        self.logger = logger
        self.wakes = wakes
        loop = BusWatchLoop(bus: bus, label: "fetchd-network-watcher", logger: logger, logPrefix: "network",
                            purpose: "follow NetworkManager", state: LinkState())
    }

    private func apply(_ state: NetworkState?) async {
        if await conditions.setNetworkManagerState(state) { wakes.wake(.conditions) }
    }

    /// NetworkManager appeared: read its properties through the listener's queue.
    private func readState(_ link: BusWatchLoop<NetworkWatcher>.Link) async {
        guard let listener = link.bus.listener, let signals = link.signals else { return }
        do throws(BusError) {
            try await listener.perform { connection throws(BusError) in try signals.readState(on: connection) }
        } catch {
            logger.info("network: cannot read NetworkManager's state (\(error)); network_metered decides")
            await apply(nil)
        }
    }
}

extension NetworkWatcher: BusWatching {
    /// NetworkManager's, installed on each connection.
    typealias Signals = NetworkManagerSignals

    /// What the watcher has logged, kept until it leaves the bus.
    struct LinkState {
        /// Whether NetworkManager's absence has been logged already.
        var absentLogged = false
        /// Whether "following NetworkManager" was said since NetworkManager was last seen absent:
        /// said once its state is read, not at connecting (it may not be on the bus at all).
        var followingLogged = false
    }

    /// Whether some handler needs the network.
    func wanted() async -> Bool {
        await conditions.anyHandlerNeedsNetwork()
    }

    /// Listening; "following" is said once NetworkManager's state is read.
    func connected(again: Bool) {
        logger.debug("network: listening for NetworkManager on the \(bus)")
    }

    /// Says so when the bus is left, and hands the decision back to `network_metered`.
    func left(wasOpen: Bool) async {
        if wasOpen {
            logger.info("network: no handler needs the network any more; left the \(bus)")
        }
        await apply(nil)
    }

    /// Logged at info level: `network_metered` then decides.
    func outageBegan(_ problem: String) {
        logger.info("network: \(problem); network_metered decides until it is back, retrying")
    }

    /// `network_metered` decides until the bus is back.
    func closed(_ state: inout LinkState) async {
        state.followingLogged = false
        await apply(nil)
    }

    /// Follows NetworkManager's state, absence and return.
    func handle(_ event: NetworkManagerSignals.Event, link: inout BusWatchLoop<NetworkWatcher>.Link) async {
        switch event {
        case .state(let state):
            link.state.absentLogged = false
            if !link.state.followingLogged {
                logger.info("network: following NetworkManager on the \(bus)")
                link.state.followingLogged = true
            }
            await apply(state)
        case .absent:
            link.state.followingLogged = false
            if !link.state.absentLogged {
                logger.info("network: NetworkManager is not on the \(bus); network_metered decides until it appears")
                link.state.absentLogged = true
            }
            await apply(nil)
        case .appeared:
            await readState(link)
        }
    }
}
