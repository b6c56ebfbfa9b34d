@testable import FetchdDaemon
import FetchdConfig
import FetchdControl
import FetchdSystemd
import FetchdTestSupport
import Foundation
import Logging
import Synchronization
import Testing

/// A reload reads and parses its files off the executor's threads, which also run the
/// watchdog's pings and the control socket: a slow parse must not stop them.
@Suite(.serialized)
struct ReloadParsingTests {
    /// Every load runs on the reload's own queue, never on a thread of the executor, so no
    /// parse, however slow, holds a thread the watchdog's pings need. Told by whether a task is
    /// current where the load runs, not by timing, which the other suites' load makes unreliable.
    @Test func theLoadRunsOnTheReloadQueue() async throws {
        let directory = try TemporaryDirectory("reload-parsing")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, handlers: "")
        let config = await coordinator.config
        let labels = Mutex<[String]>([])
        let service = ReloadService(target: coordinator, notifier: SystemdNotifier(environment: [:]),
                                    logger: Logger(label: "reload-parsing"),
                                    load: { () throws(ConfigLoadError) -> LoadedConfig in
                                        // On the queue no task runs; on the executor the reload's would.
                                        let inTask = withUnsafeCurrentTask { $0 != nil }
                                        labels.withLock { $0.append(inTask ? "a task on the executor" : "the reload queue") }
                                        return config
                                    },
                                    afterApply: {}, requests: ReloadService.Requests())
        let reports = await withTaskGroup(of: ReloadReport.self) { group in
            for _ in 0..<4 { group.addTask { await service.reload() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(reports.count == 4 && reports.allSatisfy(\.applied), "\(reports)")
        let seen = labels.withLock { $0 }
        #expect(!seen.isEmpty && seen.allSatisfy { $0 == "the reload queue" }, "loaded on \(seen)")
    }
}
