import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

/// The C library's local zone gives what Foundation's ICU-backed `TimeZone.current` gives.
struct SystemTimeZoneTests {
    @Test func offsetsAndClockTextMatchFoundation() {
        let zone = TimeZone.current
        let formatter = DateFormatter()
        formatter.timeZone = zone
        // Every 13 days and an hour, from late 2024 to 2029: both sides of any daylight-saving
        // change of the test's own zone (the other suite covers zones that have them).
        let step: Double = 86_400 * 13 + 3_671
        let offsets: [Double] = (-30..<85).map { Double($0) * step }
        let dates = offsets.map { Date(timeIntervalSince1970: 1_767_225_600 + $0) }
        for date in dates {
            #expect(SystemTimeZone.secondsFromGMT(at: date) == zone.secondsFromGMT(for: date), "\(date)")
            formatter.dateFormat = "HH:mm"
            #expect(SystemTimeZone.hourMinute(date) == formatter.string(from: date))
            formatter.dateFormat = "HH:mm:ss"
            #expect(SystemTimeZone.hourMinuteSecond(date) == formatter.string(from: date))
        }
    }
}

/// The same under zones with daylight saving time, in a child process with its own `TZ`.
@Suite(.enabled(if: FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/Europe/Berlin"), "needs tzdata"))
struct SystemTimeZoneOtherZoneTests {
    private func localTime(zone: String, _ epochs: [Int]) throws -> [String] {
        let helper = Process()
        helper.executableURL = URL(fileURLWithPath: TestBinaries.path(of: "fetchd-test-helper"))
        helper.arguments = ["local-time"] + epochs.map(String.init)
        helper.environment = ["TZ": zone]
        let output = Pipe()
        helper.standardOutput = output
        try helper.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        helper.waitUntilExit()
        return text.split(separator: "\n").map(String.init)
    }

    @Test func berlinAndNewYorkInWinterAndSummer() throws {
        // 2026-01-15 12:00:00 UTC, 2026-07-15 12:00:00 UTC, 1969-07-20 20:17:40 UTC.
        let epochs = [1_768_478_400, 1_784_116_800, -14_182_940]
        #expect(try localTime(zone: "Europe/Berlin", epochs) == ["3600 13:00 13:00:00", "7200 14:00 14:00:00", "3600 21:17 21:17:40"])
        #expect(try localTime(zone: "America/New_York", epochs) == ["-18000 07:00 07:00:00", "-14400 08:00 08:00:00", "-14400 16:17 16:17:40"])
        #expect(try localTime(zone: "UTC", epochs) == ["0 12:00 12:00:00", "0 12:00 12:00:00", "0 20:17 20:17:40"])
    }
}
