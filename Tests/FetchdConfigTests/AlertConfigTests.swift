import FetchdConfig
import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

/// The failure-alert keys: `on_failure` and `alert_after`, in the main file and per handler
/// (the handler's override the main file's; `on_failure = []` opts a handler out).
struct AlertConfigTests {
    private func load(main: String = "", _ extra: String) throws -> (LoadedConfig, TemporaryDirectory, String) {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        let mainFile = try folder.write(main, to: "fetchd.toml")
        try folder.write("""
            [[handler]]
            name = "feed"
            kind = "http"
            url = "https://example.org/feed"
            \(extra)
            """, to: "handlers.d/feed.toml")
        return (try ConfigLoader.load(mainFile: mainFile), folder, mainFile)
    }

    @Test func theDefaultsAlertAfterThreeWithNoProgram() throws {
        let (loaded, folder, _) = try load("")
        defer { folder.remove() }
        let handler = try #require(loaded.handler(named: "feed"))
        #expect(loaded.daemon.onFailure == nil && loaded.daemon.alertAfter == Defaults.alertAfter)
        #expect(handler.alertAfter == 3 && handler.alertCommand(daemon: loaded.daemon) == nil)
        #expect(!loaded.runsPrograms)
    }

    @Test func aHandlerOverridesTheMainFile() throws {
        let main = "on_failure = [\"/bin/echo\", \"main\"]\nalert_after = 5\n"
        let (inherited, folder, _) = try load(main: main, "")
        defer { folder.remove() }
        let plain = try #require(inherited.handler(named: "feed"))
        #expect(plain.alertCommand(daemon: inherited.daemon) == ["/bin/echo", "main"] && plain.alertAfter == 5)
        #expect(inherited.runsPrograms)
        let (own, other, _) = try load(main: main, "on_failure = [\"/bin/echo\", \"own\"]\nalert_after = 1")
        defer { other.remove() }
        let handler = try #require(own.handler(named: "feed"))
        #expect(handler.alertCommand(daemon: own.daemon) == ["/bin/echo", "own"] && handler.alertAfter == 1)
        let (optedOut, third, _) = try load(main: main, "on_failure = []")
        defer { third.remove() }
        #expect(try #require(optedOut.handler(named: "feed")).alertCommand(daemon: optedOut.daemon) == nil)
    }

    @Test func badValuesAreReportedAtTheirFileLineAndKey() throws {
        let (loaded, folder, _) = try load("on_failure = [\"\"]\nalert_after = 0")
        defer { folder.remove() }
        #expect(loaded.handler(named: "feed") == nil)
        let problems = loaded.diagnostics.map { "\(PathName.lastComponent(of: $0.file)):\($0.line ?? 0) \($0.key ?? "")" }
        #expect(problems == ["feed.toml:5 on_failure", "feed.toml:6 alert_after"], "\(loaded.diagnostics)")
        #expect(loaded.diagnostics.first?.message.contains("the program (first element) is empty") == true)
        #expect(loaded.diagnostics.last?.message.contains("1 to 1000") == true, "\(loaded.diagnostics)")
    }

    @Test func aBadMainFileValueStopsTheStart() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let mainFile = try folder.write("alert_after = 2\non_failure = \"/bin/echo\"\n", to: "fetchd.toml")
        let problems = ConfigLoader.examine(path: mainFile).diagnostics
        #expect(problems.count == 1 && problems.first?.line == 2 && problems.first?.key == "on_failure"
                    && problems.first?.effect == .stopsStart, "\(problems)")
    }

    @Test func registrationsMayNotNameAProgram() {
        #expect(Registration.refusedKeys["on_failure"] != nil)
    }
}
