@testable import FetchdDaemon
import FetchdCore
import FetchdSystemd
import FetchdTestSupport
import Foundation
import Testing

/// fetchd-dbus(7) says the D-Bus API's limits as the code sets them.
@Suite struct BusLimitsTests {
    @Test func theManPageSaysTheLimits() throws {
        let page = try String(contentsOfFile: TestBinaries.sourceTree + "/docs/man/fetchd-dbus.7.scd", encoding: .utf8)
            .replacingOccurrences(of: "\n\t", with: " ")
        let limits = BusOption.Limits()
        for words in ["At most \(limits.entries) entries", "at most \(limits.stringBytes) bytes",
                      "at most \(limits.elements) elements", "\(Defaults.dbusMaxHandlers) handlers per uid by default",
                      "\(BusService.maxCallsInFlight) at once", "answering \(BusService.maxCallsInFlight) calls already",
                      "Uses within \(Int(UseFolder.sessionSeconds / 60)) minutes of the last one recorded"] {
            #expect(page.contains(words), "fetchd-dbus(7) does not say \"\(words)\"")
        }
    }
}
