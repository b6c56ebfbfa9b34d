import FetchdTestSupport
import Foundation
import Testing

/// What a start under the shipped unit says in the journal: no noise, nothing said twice or
/// wrongly.
extension SystemdTests { @Suite(.serialized) struct FetchdJournalTests {
    @Test func aStartSaysOnlyWhatIsTrue() async throws {
        let namespace = try await SystemdNamespace()
        defer { namespace.shutdown() }
        // A handler that needs an unmetered network: fetchd looks for NetworkManager, which is
        // not on this namespace's bus.
        try await FetchdUnitTests.install(namespace, handlers: FetchdUnitTests.clock + "\nnetwork = \"unmetered\"\n")
        try await namespace.check(["systemctl", "start", "fetchd.service"])
        var log: [String] = []
        #expect(try await eventually(timeoutSeconds: 30) {
            log = try await namespace.journalMessages(unit: "fetchd.service")
            return log.contains { $0.contains("NetworkManager is not on the system bus") }
        }, "\(log)")
        #expect(!log.contains { $0.contains("following NetworkManager") }, "said it follows an absent NetworkManager: \(log)")
        // libdispatch's threads may set the nice values they ask for: the unit allows nice -4
        // (RLIMIT_NICE 24), and where the manager could apply that no refusal is logged. The
        // manager needs CAP_SYS_RESOURCE to raise the limit: a sandbox without it (some CI
        // containers) leaves the process at 0, and then only the unit's setting is checked.
        #expect(try await namespace.property("LimitNICE", of: "fetchd.service") == "24")
        _ = try await namespace.run([FetchdUnitTests.binDirectory + "/fetchctl", "fetch", "clock", "--wait",
                                     "--socket", "/run/fetchd/control.sock"])
        let pid = try await namespace.property("MainPID", of: "fetchd.service")
        let limits = try await namespace.check(["cat", "/proc/\(pid)/limits"]).stdout
        if limits.split(separator: "\n").contains(where: { $0.hasPrefix("Max nice priority") && $0.contains(" 24 ") }) {
            log = try await namespace.journalMessages(unit: "fetchd.service")
            #expect(!log.contains { $0.contains("Failed to set thread priority") }, "\(log)")
        }
    }
} }
