@testable import FetchdDaemon
import FetchdHandlers
import FetchdTestSupport
import Foundation
import Testing

/// Programs that cannot each have a control group run in process groups only, which a program
/// that leaves its session can outlive: `fetchctl status` says so when a handler runs programs,
/// and says nothing when none does or when they have groups.
struct ProgramIsolationStatusTests {
    @Test func statusSaysHowProgramsRunWhenTheyLackTheirOwnGroup() async throws {
        let directory = try TemporaryDirectory("fetchd-isolation")
        defer { directory.remove() }
        let exec = """
            [[handler]]
            name = "prog"
            kind = "exec"
            command = ["/bin/true"]
            min_interval = "never"
            """
        let programs = try TestConfig.coordinator(in: directory, handlers: exec)
        let said = await programs.status(markSeen: false).programIsolation
        switch ProgramCgroup.placement {
        case .processGroups:
            #expect(said == ProgramCgroup.placement.description && said?.contains("process groups only") == true, "\(String(describing: said))")
        case .cgroups:
            #expect(said == nil)
        }
        let other = try TemporaryDirectory("fetchd-isolation-http")
        defer { other.remove() }
        let http = """
            [[handler]]
            name = "feed"
            kind = "http"
            url = "https://example.com/"
            min_interval = "never"
            """
        #expect(try await TestConfig.coordinator(in: other, handlers: http).status(markSeen: false).programIsolation == nil,
                "no handler runs a program: nothing to say")
    }
}
