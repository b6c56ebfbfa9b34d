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
/// retries the bus with growing delays and follows NetworkManager coming and going. It never
/// ends the daemon.
final class NetworkWatcher: Service, Sendable {
    private enum Event: Sendable {
        case refresh
        case retry
        case networkManager(NetworkManagerSignals.Event)
        case closed(BusError)
    }

    private let conditions: any ConditionsSink
    private let logger: Logger
    /// Asked for a wake when the conditions change.
    private let wakes: any WakeRequests
    private let bus: BusConnection.Bus
    private let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation

    /// `bus` is the system bus but for tests of the watcher itself.
    init(conditions: any ConditionsSink, logger: Logger, bus: BusConnection.Bus = .system, wakes: any WakeRequests) {
        self.conditions = conditions
        self.logger = logger
        self.bus = bus
        self.wakes = wakes
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    /// Takes the configuration now in force into account (after a reload).
    func refresh() { continuation.yield(.refresh) }

    private struct Link {
        var bus = BusLink()
        var signals: NetworkManagerSignals?
        /// Whether NetworkManager's absence has been logged already.
        var absentLogged = false
        /// Whether "following NetworkManager" was said since NetworkManager was last seen absent:
        /// said once its state is read, not at connecting (it may not be on the bus at all).
        var followingLogged = false
    }

    /// Runs until graceful shutdown (see `SessionWatcher.run` for why this never waits long).
    func run() async {
        continuation.yield(.refresh)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                var link = Link()
                for await event in events {
                    switch event {
                    case .refresh, .retry:
                        if case .retry = event { link.bus.retryDue() }
                        await connectIfWanted(&link, group: &group)
                    case .closed(let error):
                        link.bus.lost()
                        link.followingLogged = false
                        await apply(nil)
                        failed(&link, "the system bus connection closed (\(error))", group: &group)
                    case .networkManager(.state(let state)):
                        link.absentLogged = false
                        if !link.followingLogged {
                            logger.info("network: following NetworkManager on the \(bus)")
                            link.followingLogged = true
                        }
                        await apply(state)
                    case .networkManager(.absent):
                        link.followingLogged = false
                        if !link.absentLogged {
                            logger.info("network: NetworkManager is not on the \(bus); network_metered decides until it appears")
                            link.absentLogged = true
                        }
                        await apply(nil)
                    case .networkManager(.appeared):
                        await readState(&link)
                    }
                }
                _ = link.bus.leave()
                group.cancelAll()
            }
        } onGracefulShutdown: { [continuation] in
            continuation.finish()
        }
    }

    private func apply(_ state: NetworkState?) async {
        if await conditions.setNetworkManagerState(state) { wakes.wake(.conditions) }
    }

    private func wanted() async -> Bool {
        await conditions.anyHandlerNeedsNetwork()
    }

    private func connectIfWanted(_ link: inout Link, group: inout DiscardingTaskGroup) async {
        guard await wanted() else {
            if link.bus.leave() {
                logger.info("network: no handler needs the network any more; left the \(bus)")
            }
            link = Link()
            await apply(nil)
            return
        }
        guard link.bus.mayConnect else { return }
        let continuation = self.continuation
        let signals = NetworkManagerSignals { continuation.yield(.networkManager($0)) }
        do throws(BusError) {
            _ = try await link.bus.open(
                bus, label: "fetchd-network-watcher",
                setup: { connection throws(BusError) in try signals.install(on: connection) },
                onClose: { continuation.yield(.closed($0)) })
            link.signals = signals
            logger.debug("network: listening for NetworkManager on the \(bus)")
        } catch {
            failed(&link, "cannot follow NetworkManager on the \(bus) (\(error))", group: &group)
        }
    }

    /// NetworkManager appeared: read its properties through the listener's queue.
    private func readState(_ link: inout Link) async {
        guard let listener = link.bus.listener, let signals = link.signals else { return }
        do throws(BusError) {
            try await listener.perform { connection throws(BusError) in try signals.readState(on: connection) }
        } catch {
            logger.info("network: cannot read NetworkManager's state (\(error)); network_metered decides")
            await apply(nil)
        }
    }

    /// Logs a failure to reach the bus (the first of an outage at info level: network_metered
    /// then decides) and retries later.
    private func failed(_ link: inout Link, _ problem: String, group: inout DiscardingTaskGroup) {
        let continuation = self.continuation
        link.bus.failed(problem, logger: logger, prefix: "network", firstLog: {
            logger.info("network: \($0); network_metered decides until it is back, retrying")
        }, in: &group) { continuation.yield(.retry) }
    }
}
