import FetchdConfig
@testable import FetchdDaemon
import FetchdTestSupport
import Foundation
import Testing

/// A reload changes which handler a name means.
@Suite struct ReloadHandlersTests {
    /// An exec handler named `name` that writes `text`, run only on request.
    private static func handler(_ name: String, writes text: String) -> String {
        """
        [[handler]]
        name = "\(name)"
        kind = "exec"
        command = ["/bin/sh", "-c", "printf \(text) > \\"$FETCHD_OUTPUT\\""]
        min_interval = "never"

        """
    }

    /// After a reload that removes one handler, adds one and moves and changes another, a fetch
    /// by name runs the handler the new configuration gives that name (`LoadedConfig` looks
    /// names up in an index of its own handlers).
    @Test func aFetchByNameRunsTheReloadedHandler() async throws {
        let directory = try TemporaryDirectory("reload-handlers")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(
            in: directory, main: "", handlers: Self.handler("a", writes: "a") + Self.handler("b", writes: "b1"))
        #expect(await coordinator.fetch("b", trigger: .manual)?.result == .newData)
        let main = try TestConfig.write(in: directory, main: "",
                                        handlers: Self.handler("b", writes: "b2") + Self.handler("c", writes: "c"))
        await coordinator.apply(try ConfigLoader.load(mainFile: main))

        #expect(await coordinator.fetch("a", trigger: .manual) == nil, "a is no longer loaded")
        for (name, text) in [("b", "b2"), ("c", "c")] {
            let record = await coordinator.fetch(name, trigger: .manual)
            #expect(record?.handler == name && record?.result == .newData, "\(String(describing: record))")
            let content = try String(contentsOfFile: coordinator.snapshots.latestContentPath(of: name), encoding: .utf8)
            #expect(content == text)
        }
    }
}
