import FetchdConfig
@testable import FetchdDaemon
import FetchdTestSupport
import Foundation
import Testing

/// A reload resizes every slot pool to the new configuration, without a restart.
@Suite struct ReloadLimitsTests {
    /// Each limit read again changes its pool: the transfer slots were sized once at start.
    @Test func aReloadResizesProgramHTTPAndTransferSlots() async throws {
        let directory = try TemporaryDirectory("reload-limits")
        let handlers = """
            [[handler]]
            name = "one"
            kind = "exec"
            command = ["/bin/true"]
            min_interval = "never"
            """
        let coordinator = try TestConfig.coordinator(
            in: directory, main: "max_concurrent = 2\nhttp_max_transfers = 4\ntransfer_max_active = 1", handlers: handlers)
        let pipeline = await coordinator.pipeline
        #expect(pipeline.programSlots.limit == 2 && pipeline.httpSlots.limit == 4 && pipeline.transfers.slots.limit == 1)
        let main = try TestConfig.write(in: directory, main: "max_concurrent = 5\nhttp_max_transfers = 8\ntransfer_max_active = 3",
                                        handlers: handlers)
        await coordinator.apply(try ConfigLoader.load(mainFile: main))
        #expect(pipeline.programSlots.limit == 5)
        #expect(pipeline.httpSlots.limit == 8)
        #expect(pipeline.transfers.slots.limit == 3, "transfer_max_active applies at a reload")
    }
}
