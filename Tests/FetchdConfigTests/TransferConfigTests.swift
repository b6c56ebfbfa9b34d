import FetchdConfig
import FetchdCore
import FetchdTestSupport
import Foundation
import Testing

/// The transfer keys: `kind = "transfer"` with `sha256`, `max_bytes_per_second`, `stall_timeout`
/// and `on_complete`; `transfer_max_active` and `transfer_max_bytes_per_second` in the main file.
/// (Refusals are in the broken corpus, fixtures 66 to 72.)
struct TransferConfigTests {
    private func load(in folder: TemporaryDirectory, main: String = "", _ extra: String) throws -> LoadedConfig {
        let mainFile = try folder.write(main, to: "fetchd.toml")
        try folder.write("""
            [[handler]]
            name = "iso"
            kind = "transfer"
            url = "https://example.org/debian.iso"
            \(extra)
            """, to: "handlers.d/iso.toml")
        return try ConfigLoader.load(mainFile: mainFile)
    }

    @Test func transfersHaveTheirOwnDefaults() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let loaded = try load(in: folder, "")
        #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
        let handler = try #require(loaded.handler(named: "iso"))
        #expect(handler.kind == .transfer)
        #expect(handler.maxBytes == Defaults.transferMaxBytes, "not the 16 MiB of a fetch")
        #expect(handler.minInterval == .seconds(86_400), "not a download every wake")
        #expect(handler.transfer?.sha256 == nil && handler.transfer?.onComplete == nil && handler.transfer?.maxBytesPerSecond == 0)
        #expect(handler.transfer?.stallSeconds == Defaults.transferStallSeconds)
        #expect(loaded.daemon.transferMaxActive == 2 && loaded.daemon.transferMaxBytesPerSecond == 0)
    }

    @Test func everyKeyIsRead() throws {
        let folder = try TemporaryDirectory("fetchd-config-tests")
        defer { folder.remove() }
        let digest = String(repeating: "AB", count: 32)
        let loaded = try load(in: folder, main: "transfer_max_active = 3\ntransfer_max_bytes_per_second = 5000000", """
            sha256 = "\(digest)"
            max_bytes_per_second = 1000000
            stall_timeout = "2m"
            on_complete = ["/usr/bin/install-iso", "--quiet"]
            min_interval = "1h"
            max_bytes = 4096
            """)
        #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
        let handler = try #require(loaded.handler(named: "iso"))
        #expect(handler.transfer?.sha256 == digest.lowercased())
        #expect(handler.transfer?.maxBytesPerSecond == 1_000_000 && handler.transfer?.stallSeconds == 120)
        #expect(handler.transfer?.onComplete == ["/usr/bin/install-iso", "--quiet"])
        #expect(handler.minInterval == .seconds(3600) && handler.maxBytes == 4096)
        #expect(loaded.daemon.transferMaxActive == 3 && loaded.daemon.transferMaxBytesPerSecond == 5_000_000)
    }
}
