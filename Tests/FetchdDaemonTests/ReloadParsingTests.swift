@testable import FetchdDaemon
import FetchdConfig
import FetchdControl
import FetchdSystemd
import FetchdTestSupport
import Foundation
import Logging
import Testing

/// A reload reads and parses its files off the executor's threads, which also run the
/// watchdog's pings and the control socket: a slow parse must not stop them.
@Suite(.serialized)
struct ReloadParsingTests {
    /// As many reloads at once as the executor has threads, each taking 2 s to load: a task
    /// that wakes meanwhile still runs on time. (Parsed on the executor, every thread would
    /// be held for the 4 s, and the task with them.)
    @Test func aSlowLoadDoesNotHoldTheExecutor() async throws {
        let directory = try TemporaryDirectory("reload-parsing")
        defer { directory.remove() }
        let coordinator = try TestConfig.coordinator(in: directory, handlers: "")
        let config = await coordinator.config
        let service = ReloadService(target: coordinator, notifier: SystemdNotifier(environment: [:]),
                                    logger: Logger(label: "reload-parsing"),
                                    load: { () throws(ConfigLoadError) -> LoadedConfig in
                                        usleep(4_000_000)
                                        return config
                                    },
                                    afterApply: {}, requests: ReloadService.Requests())
        let threads = ProcessInfo.processInfo.activeProcessorCount
        let started = ContinuousClock.now
        // A task that wakes 300 ms in, once the reloads are loading, and notes when it ran.
        let ping = Task.detached { () -> Duration in
            try? await Task.sleep(for: .milliseconds(300))
            return ContinuousClock.now - started
        }
        let reports = await withTaskGroup(of: ReloadReport.self) { group in
            for _ in 0..<threads { group.addTask { await service.reload() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let pinged = await ping.value
        #expect(reports.count == threads && reports.allSatisfy(\.applied), "\(reports)")
        // Held by the loads it would run after 4 s; a loaded machine delays it by a second or two.
        #expect(pinged < .milliseconds(3500), "the task woken at 300 ms ran at \(pinged)")
    }
}
