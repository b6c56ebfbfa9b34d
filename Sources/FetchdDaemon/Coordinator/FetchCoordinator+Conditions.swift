import FetchdConfig
import Foundation

extension FetchCoordinator {
    /// The network as the scheduler sees it (`Conditions.network`).
    var network: NetworkState { conditions.network(meteredSetting: config.daemon.networkMetered) }

    /// Reads the power supplies again; returns whether anything changed. Called on every wake
    /// and status request: inotify on sysfs attribute files is not delivered for most drivers
    /// (the kernel does not notify on a changed value), so the heartbeat is the fallback that
    /// always works, and the power watcher's inotify only makes it sooner where it works.
    @discardableResult
    func refreshPower() -> Bool {
        let now = PowerState.read(from: config.daemon.powerSupplyDirectory)
        guard now != conditions.power else { return false }
        let critical = now.criticallyLow ? ", critically low: scheduled fetches wait" : ""
        logger.info("power: \(now.onAC ? "on AC" : "on battery")\(now.batteryPercent.map { ", battery \($0) %" } ?? "")\(critical)")
        conditions.power = now
        pauseTransfersWithUnmetConditions()
        return true
    }

    /// Takes NetworkManager's view (nil: it left the bus, `network_metered` decides); returns
    /// whether the scheduler's view of the network changed.
    @discardableResult
    func setNetworkManagerState(_ state: NetworkState?) -> Bool {
        let before = network
        conditions.networkManager = state
        guard network != before else { return false }
        logger.info("network: \(network.online ? "online" : "offline"), \(network.meteredText)")
        pauseTransfersWithUnmetConditions()
        return true
    }

    /// Takes power-profiles-daemon's active profile (nil: it is not on the bus); returns whether
    /// power-saver began or ended, which is all the scheduler reads of it. Both of its bus names
    /// may report one change: the second finds nothing changed.
    @discardableResult
    func setPowerProfile(_ profile: String?) -> Bool {
        let before = conditions.powerSaver
        if profile != conditions.powerProfile {
            logger.info("power profile: \(profile ?? "unknown (power-profiles-daemon is not on the bus)")")
        }
        conditions.powerProfile = profile
        guard conditions.powerSaver != before else { return false }
        pauseTransfersWithUnmetConditions()
        return true
    }

    /// Pauses the running transfers whose scheduled fetch would wait now: their conditions
    /// stopped holding, power-saver began (`power_saver = "defer"`), or the battery is
    /// critically low; in the words of the wait (`Eligibility.waits`).
    func pauseTransfersWithUnmetConditions() {
        pipeline.transfers.pause { name in config.handler(named: name).flatMap(scheduledWait) }
    }

    /// Why `handler`'s scheduled fetch waits now (`Eligibility.waits`: its conditions,
    /// power-saver, a critically low battery); nil when nothing holds it.
    func scheduledWait(_ handler: HandlerConfig) -> String? {
        var input = EligibilityInput(now: Date(), handlers: [handler], heartbeatSeconds: config.daemon.heartbeatSeconds)
        input.unmetConditions[handler.name] = unmetConditions(handler)
        noteMachineState(in: &input)
        return Eligibility.waitReasons(input)[handler.name]
    }

    /// Puts the machine's state every handler's scheduled fetch may wait for into `input`:
    /// power-saver and a critically low battery.
    func noteMachineState(in input: inout EligibilityInput) {
        input.powerSaver = conditions.powerSaver
        input.criticalBatteryPercent = conditions.power.criticallyLow ? conditions.power.batteryPercent ?? 0 : nil
    }

    /// Why `handler`'s scheduled fetch waits now; nil when its conditions hold.
    func unmetConditions(_ handler: HandlerConfig) -> String? {
        conditions.unmet(handler, meteredSetting: config.daemon.networkMetered)
    }
}
