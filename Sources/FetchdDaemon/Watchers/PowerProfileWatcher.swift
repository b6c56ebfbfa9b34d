import FetchdConfig
import FetchdSystemd
import Foundation
import Logging
import ServiceLifecycle

/// Follows power-profiles-daemon on the system bus (`PowerProfileSignals`) and hands its active
/// profile to the coordinator. When power-saver begins or ends it asks the wake clock for one
/// wake: leaving power-saver starts every fetch it deferred in that one wake (within each
/// handler's budget, as any wake), not one wake per handler.
///
/// Connected only while some handler has `power_saver = "defer"`, and following reloads
/// (`refresh()`). Without a system bus or without power-profiles-daemon, nothing is held back
/// for power-saver: many machines have neither, so this is logged at info level, once per
/// outage. Without the bus's socket the watcher waits for it to appear (`BusSocketWait`),
/// otherwise it retries the bus with growing delays; it follows power-profiles-daemon coming
/// and going (`BusWatchLoop`). It never ends the daemon.
final class PowerProfileWatcher: Service, Sendable {
    private let conditions: any ConditionsSink
    private let logger: Logger
    /// Asked for a wake when power-saver begins or ends.
    private let wakes: any WakeRequests
    /// Opened once the profile is first known (read, or power-profiles-daemon or the bus
    /// missing, or no handler wanting it): the daemon's first wake waits for it.
    private let firstLook: StartGate?
    /// Runs the watcher: `run()` and `refresh()` are the loop's (`BusWatching`).
    let loop: BusWatchLoop<PowerProfileWatcher>

    /// `bus` is the system bus but for tests of the watcher itself; `firstLook` is opened once
    /// the profile is first known.
    init(conditions: any ConditionsSink, logger: Logger, bus: BusConnection.Bus = .system, wakes: any WakeRequests,
         firstLook: StartGate? = nil) {
        self.conditions = conditions
        self.logger = logger
        self.wakes = wakes
        self.firstLook = firstLook
        loop = BusWatchLoop(bus: bus, label: "fetchd-power-profile-watcher", logger: logger, logPrefix: "power profile",
                            purpose: "follow power-profiles-daemon", state: LinkState(),
                            // Wanted by default (`power_saver = "defer"`): on a machine without a
                            // system bus it waits for the socket rather than retrying while idle.
                            waitsForBusSocket: true)
    }

    /// The errors of a call to a name that has no owner (any more).
    private static let nameLeft: Set = ["org.freedesktop.DBus.Error.NameHasNoOwner", "org.freedesktop.DBus.Error.ServiceUnknown"]

    private func apply(_ profile: String?) async {
        if await conditions.setPowerProfile(profile) { wakes.wake(.conditions) }
        firstLook?.open()
    }

    /// A name appeared or the one followed changed: read the profile through the listener's
    /// queue.
    private func readProfile(_ link: BusWatchLoop<PowerProfileWatcher>.Link) async {
        guard let listener = link.bus.listener, let signals = link.signals else { return }
        do throws(BusError) {
            try await listener.perform { connection throws(BusError) in try signals.readProfile(on: connection) }
        } catch where Self.nameLeft.contains(error.name ?? "") {
            // It left while being read (0.20 stopping gives up one name, then the other): the
            // bus's NameOwnerChanged for it follows, and says who to read next.
            logger.debug("power profile: power-profiles-daemon left while its profile was read (\(error))")
        } catch {
            logger.info("power profile: cannot read power-profiles-daemon's profile (\(error)); nothing waits for power-saver until it changes")
            await apply(nil)
        }
    }
}

extension PowerProfileWatcher: BusWatching {
    /// power-profiles-daemon's, installed on each connection.
    typealias Signals = PowerProfileSignals

    /// What the watcher has logged, kept until it leaves the bus.
    struct LinkState {
        /// Whether power-profiles-daemon's absence has been logged already.
        var absentLogged = false
        /// Whether "following" was said since power-profiles-daemon was last seen absent: said
        /// once its profile is read, not at connecting (it may not be on the bus at all).
        var followingLogged = false
    }

    /// Whether some handler's scheduled fetches wait in power-saver.
    func wanted() async -> Bool {
        await conditions.anyHandlerDefersInPowerSaver()
    }

    /// Listening; "following" is said once the profile is read.
    func connected(again: Bool) {
        logger.debug("power profile: listening for power-profiles-daemon on the \(bus)")
    }

    /// Says so when the bus is left; power-saver no longer holds anything back.
    func left(wasOpen: Bool) async {
        if wasOpen {
            logger.info("power profile: no handler defers in power-saver any more; left the \(bus)")
        }
        await apply(nil)
    }

    /// Logged at info level: nothing waits for power-saver meanwhile.
    func outageBegan(_ problem: String) {
        logger.info("power profile: \(problem); nothing waits for power-saver until it is back, retrying")
        firstLook?.open()
    }

    /// Nothing waits for power-saver until the bus is back: a profile no one reports could
    /// otherwise hold fetches back for good.
    func closed(_ state: inout LinkState) async {
        state.followingLogged = false
        await apply(nil)
    }

    /// Follows the profile, power-profiles-daemon's absence and return.
    func handle(_ event: PowerProfileSignals.Event, link: inout BusWatchLoop<PowerProfileWatcher>.Link) async {
        switch event {
        case .profile(let profile):
            link.state.absentLogged = false
            if !link.state.followingLogged {
                logger.info("power profile: following power-profiles-daemon on the \(bus)")
                link.state.followingLogged = true
            }
            await apply(profile)
        case .absent:
            link.state.followingLogged = false
            if !link.state.absentLogged {
                logger.info("power profile: power-profiles-daemon is not on the \(bus); nothing waits for power-saver until it appears")
                link.state.absentLogged = true
            }
            await apply(nil)
        case .appeared:
            await readProfile(link)
        }
    }
}
