import FetchdCore
import Foundation

/// The machine's power, from the kernel's power supply class (`/sys/class/power_supply`):
/// whether it runs on AC, and the charge of its battery.
///
/// - AC: any supply of type `Mains` or `USB` (a USB-C charger) with `online` = 1. A machine with
///   no such supply and no battery is a desktop: on AC. One with batteries but no Mains/USB
///   supply is on AC unless a battery reports `Discharging`.
/// - Battery: the lowest `capacity` among the system's batteries (type `Battery`, `scope` not
///   `Device`: a mouse's or a headset's battery says nothing about the machine's). The lowest,
///   not an average: with two batteries the machine may stop when the emptier one does (some
///   laptops drain one first), so the conservative figure is the one a condition should wait for.
///
/// - Critically low: not on AC, and every system battery reports `Discharging` with a capacity
///   of `Defaults.criticalBatteryPercent` or less: systemd 254's `systemd-ac-power --low`
///   (`battery_is_discharging_and_low`), which systemd 252 lacks. A battery whose capacity cannot
///   be read, or one charging or full, means not critical: as systemd, fetchd does not guess low.
public struct PowerState: Sendable, Equatable {
    /// Whether the machine runs on AC power.
    public var onAC: Bool
    /// The lowest charge of the system's batteries, in percent; nil without a battery.
    public var batteryPercent: Int?
    /// Whether the battery is critically low (see the type's description): every scheduled
    /// fetch waits, whatever its handler's conditions.
    public var criticallyLow: Bool

    /// A state; the default is a desktop on AC without a battery.
    public init(onAC: Bool = true, batteryPercent: Int? = nil, criticallyLow: Bool = false) {
        self.onAC = onAC
        self.batteryPercent = batteryPercent
        self.criticallyLow = criticallyLow
    }

    /// Reads the supplies listed in `directory` (each a folder, or a symbolic link to one, with
    /// `type`, `online`, `capacity`, `status`, `scope` files). A missing or unreadable folder
    /// reads as a desktop on AC: not knowing must not hold fetches back forever.
    public static func read(from directory: String) -> PowerState {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        var sawExternal = false, externalOnline = false, discharging = false
        var lowest: Int?
        // Every system battery discharging at the critical level or below, and at least one.
        var batteries = 0, criticalBatteries = 0
        for name in names {
            let folder = directory + "/" + name
            switch attribute("type", of: folder) {
            case "Mains", "USB":
                sawExternal = true
                if attribute("online", of: folder) == "1" { externalOnline = true }
            case "Battery":
                guard attribute("scope", of: folder) != "Device" else { continue }
                batteries += 1
                let isDischarging = attribute("status", of: folder) == "Discharging"
                if isDischarging { discharging = true }
                if let capacity = attribute("capacity", of: folder).flatMap({ Int($0) }), (0...100).contains(capacity) {
                    lowest = min(lowest ?? capacity, capacity)
                    if isDischarging, capacity <= Defaults.criticalBatteryPercent { criticalBatteries += 1 }
                }
            default:
                continue
            }
        }
        let onAC = sawExternal ? externalOnline : !discharging
        return PowerState(onAC: onAC, batteryPercent: lowest,
                          criticallyLow: !onAC && batteries > 0 && criticalBatteries == batteries)
    }

    /// One attribute file's text, trimmed; nil when it cannot be read.
    private static func attribute(_ name: String, of folder: String) -> String? {
        guard let data = FileManager.default.contents(atPath: folder + "/" + name) else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
