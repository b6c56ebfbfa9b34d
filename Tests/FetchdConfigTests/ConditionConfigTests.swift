import FetchdConfig
import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

/// The condition keys: `network`, `power`, `battery_min` and `power_saver` on handlers; `power_supply_dir` and
/// `network_metered` in the main file.
struct ConditionConfigTests {
    private func load(in folder: TemporaryDirectory, main: String = "", _ extra: String) throws -> LoadedConfig {
        let mainFile = try folder.write(main, to: "fetchd.toml")
        try folder.write("""
            [[handler]]
            name = "feed"
            kind = "exec"
            command = ["/bin/true"]
            \(extra)
            """, to: "handlers.d/feed.toml")
        return try ConfigLoader.load(mainFile: mainFile)
    }

    @Test func defaultsWaitForNothing() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let loaded = try load(in: folder, "")
        let handler = try #require(loaded.handler(named: "feed"))
        #expect(handler.network == .any && handler.power == .any && handler.batteryMinPercent == 0)
        #expect(handler.powerSaver == .deferFetch && Defaults.powerSaver == "defer")
        #expect(loaded.daemon.powerSupplyDirectory == "/sys/class/power_supply")
        #expect(loaded.daemon.networkMetered == false)
    }

    @Test func everyConditionIsRead() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let loaded = try load(in: folder, main: "power_supply_dir = \"/tmp/ps\"\nnetwork_metered = true\n",
                              "network = \"unmetered\"\npower = \"ac\"\nbattery_min = 30\npower_saver = \"run\"")
        #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
        let handler = try #require(loaded.handler(named: "feed"))
        #expect(handler.network == .unmetered && handler.power == .ac && handler.batteryMinPercent == 30)
        #expect(handler.powerSaver == .run)
        #expect(loaded.daemon.powerSupplyDirectory == "/tmp/ps" && loaded.daemon.networkMetered)
    }

    @Test func aBadConditionKeepsTheHandlerOutWithItsLine() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let loaded = try load(in: folder, "power = \"AC\"")
        #expect(loaded.handler(named: "feed") == nil)
        let problem = try #require(loaded.diagnostics.first)
        #expect(problem.line == 5 && problem.key == "power", "\(problem)")
        #expect(problem.message.contains("\"AC\" is not a power condition"), "\(problem)")
    }

    @Test func aBadPowerSaverPolicyKeepsTheHandlerOutAndSaysWhatIsExpected() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let loaded = try load(in: folder, "power_saver = \"skip\"")
        #expect(loaded.handler(named: "feed") == nil)
        let problem = try #require(loaded.diagnostics.first)
        #expect(problem.line == 5 && problem.key == "power_saver", "\(problem)")
        #expect(problem.message.contains("expected \"defer\" or \"run\""), "\(problem)")
    }
}
