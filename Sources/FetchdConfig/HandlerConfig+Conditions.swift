import FetchdCore

extension HandlerConfig {
    /// Which network a handler's scheduled fetch waits for (`network`).
    public enum NetworkCondition: String, Sendable, Equatable, CaseIterable {
        /// Any network, metered or not (still online, for fetches that need the network).
        case any
        /// Only a network that is not metered (NetworkManager's `Metered`, or `network_metered`).
        case unmetered
    }

    /// Which power a handler's scheduled fetch waits for (`power`).
    public enum PowerCondition: String, Sendable, Equatable, CaseIterable {
        /// Battery or AC.
        case any
        /// Only on AC power (a Mains or USB supply online, or a machine without power supplies).
        case ac
    }

    /// What a scheduled fetch does while power-profiles-daemon's active profile is power-saver
    /// (`power_saver`), as GLib tells desktop applications to stop automatic downloads then.
    public enum PowerSaverPolicy: String, Sendable, Equatable, CaseIterable {
        /// Wait until the profile leaves power-saver (deferred, never skipped).
        case deferFetch = "defer"
        /// Run as in any other profile.
        case run
    }

    /// Reads `network`, `power`, `battery_min` and `power_saver`: conditions a scheduled fetch
    /// waits for (deferred, never skipped) while they do not hold.
    mutating func readConditionOptions(_ reader: inout TableReader) {
        if let text = reader.string("network") {
            if let value = NetworkCondition(rawValue: text) {
                network = value
            } else {
                reader.report("network", "\"\(text)\" is not a network condition; expected \"any\" or \"unmetered\"")
            }
        }
        if let text = reader.string("power") {
            if let value = PowerCondition(rawValue: text) {
                power = value
            } else {
                reader.report("power", "\"\(text)\" is not a power condition; expected \"any\" or \"ac\"")
            }
        }
        if let percent = reader.int("battery_min", in: 0...100) { batteryMinPercent = percent }
        if let text = reader.string("power_saver") {
            if let value = PowerSaverPolicy(rawValue: text) {
                powerSaver = value
            } else {
                reader.report("power_saver", "\"\(text)\" is not a power-saver policy; expected \"defer\" or \"run\"")
            }
        }
    }
}
