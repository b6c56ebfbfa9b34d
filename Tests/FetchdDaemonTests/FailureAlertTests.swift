import FetchdConfig
import FetchdCore
@testable import FetchdDaemon
import FetchdSystemd
import FetchdTestSupport
import Foundation
import Logging
import Synchronization
import Testing

/// Keeps every entry logged, with its metadata: the journal's fields without a journal.
final class RecordingLog: Sendable {
    /// One entry.
    struct Entry: Sendable {
        /// Its priority.
        var level: Logger.Level
        /// Its text.
        var message: String
        /// Its fields, by metadata key (`handler` becomes `FETCHD_HANDLER` in the journal).
        var metadata: [String: String]
    }

    private let kept = Mutex<[Entry]>([])

    /// The entries so far.
    var entries: [Entry] { kept.withLock { $0 } }

    /// The entries with `MESSAGE_ID` `id`.
    func entries(with id: String) -> [Entry] { entries.filter { $0.metadata[MessageID.metadataKey] == id } }

    /// A logger that records here.
    var logger: Logger {
        Logger(label: "test") { _ in Handler(log: self) }
    }

    private struct Handler: LogHandler {
        let log: RecordingLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
                 file: String, function: String, line: UInt) {
            let fields = (metadata ?? [:]).mapValues { "\($0)" }
            log.kept.withLock { $0.append(Entry(level: level, message: "\(message)", metadata: fields)) }
        }
    }
}

/// Failure alerts (issue 43): a handler failing `alert_after` times in a row runs `on_failure`
/// once and is journaled as failing; its next success runs it once more and is journaled as
/// recovered; the rate limit holds through a burst; a hanging program is stopped at its deadline.
@Suite(.serialized)
struct FailureAlertTests {
    /// A daemon's files in one folder: handlers that fail while `fail` exists, and an alert
    /// program that appends its environment to `alerts.log`.
    struct Setup {
        let directory: TemporaryDirectory
        let log = RecordingLog()
        var mainFile = ""

        /// The line each alert program run appends.
        static let alertLine = #"echo "$FETCHD_HANDLER $FETCHD_ALERT $FETCHD_RESULT $FETCHD_FAILURES [$FETCHD_LAST_SUCCESS] $FETCHD_REASON" >> "$0""#

        init(names: [String] = ["h"], main: String = "", keys: String = "", schedule: String = "never",
             alert: String? = nil) throws {
            directory = try TemporaryDirectory("alerts")
            let flag = directory.file("fail")
            let command = "if [ -e \(flag) ]; then echo broken >&2; exit 3; fi; echo 1 > \\\"$FETCHD_OUTPUT\\\""
            let handlers = names.map { name in
                """
                [[handler]]
                name = "\(name)"
                kind = "exec"
                min_interval = "\(schedule)"
                command = ["/bin/sh", "-c", "\(command)"]
                \(keys)
                """
            }.joined(separator: "\n")
            let program = alert ?? #"["/bin/sh", "-c", "\#(Self.alertLine.replacingOccurrences(of: "\"", with: "\\\""))", "\#(directory.file("alerts.log"))"]"#
            mainFile = try TestConfig.write(in: directory, main: "on_failure = \(program)\n\(main)", handlers: handlers)
            setFailing(true)
        }

        /// Makes the handlers fail (or succeed).
        func setFailing(_ failing: Bool) {
            if failing { FileManager.default.createFile(atPath: directory.file("fail"), contents: Data()) }
            else { try? FileManager.default.removeItem(atPath: directory.file("fail")) }
        }

        /// A coordinator on the files (a new one is a restart).
        func coordinator() throws -> FetchCoordinator {
            let config = try ConfigLoader.load(mainFile: mainFile)
            #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
            return try Daemon(config: config, logger: log.logger).openCoordinator()
        }

        /// The lines the alert program wrote.
        var programRuns: [String] {
            ((try? String(contentsOfFile: directory.file("alerts.log"), encoding: .utf8)) ?? "")
                .split(separator: "\n").map(String.init)
        }
    }

    /// Fetches `name` `times` times, then waits for the alerts.
    private func fetch(_ coordinator: FetchCoordinator, _ name: String = "h", times: Int = 1) async {
        for _ in 0..<times { _ = await coordinator.fetch(name, trigger: .manual) }
        await coordinator.alertsSettled()
    }

    @Test func threeFailuresAlertOnceAndASuccessRecoversOnce() async throws {
        let setup = try Setup()
        let coordinator = try setup.coordinator()
        await fetch(coordinator, times: 2)
        #expect(setup.programRuns.isEmpty)
        #expect(!(await coordinator.statusLine()).contains("failing"), "two failures are not failing yet")
        await fetch(coordinator)
        #expect(setup.programRuns.count == 1)
        #expect(setup.programRuns.first?.hasPrefix("h failing failed 3 [] exited with status 3") == true, "\(setup.programRuns)")
        let line = await coordinator.statusLine()
        #expect(line.contains("1 handler, 1 failing"), "\(line)")
        await fetch(coordinator, times: 2)
        #expect(setup.programRuns.count == 1, "a streak alerts once: \(setup.programRuns)")

        setup.setFailing(false)
        await fetch(coordinator, times: 2)
        #expect(setup.programRuns.count == 2, "\(setup.programRuns)")
        #expect(setup.programRuns.last?.hasPrefix("h recovered newData 5 []") == true, "\(setup.programRuns)")
        #expect(!(await coordinator.statusLine()).contains("failing"))

        let failing = setup.log.entries(with: MessageID.handlerFailing)
        let recovered = setup.log.entries(with: MessageID.handlerRecovered)
        #expect(failing.count == 1 && recovered.count == 1, "\(setup.log.entries.map(\.message))")
        #expect(failing.first?.metadata["handler"] == "h" && failing.first?.metadata["failures"] == "3")
        #expect(failing.first?.metadata["result"] == "failed" && failing.first?.metadata["alert_program"] == "run")
        #expect(failing.first?.level == .warning && recovered.first?.metadata["failures"] == "5")
        // The journal's field names, as the journal gets them.
        #expect(JournalLogHandler.fieldName("alert_program") == "FETCHD_ALERT_PROGRAM")
    }

    @Test func theLastSuccessIsPassedOn() async throws {
        let setup = try Setup()
        setup.setFailing(false)
        let coordinator = try setup.coordinator()
        await fetch(coordinator)
        let success = try #require(try coordinator.state.state(of: "h")?.lastSuccessAt)
        setup.setFailing(true)
        await fetch(coordinator, times: 3)
        #expect(setup.programRuns.first?.contains("[\(Int(success.timeIntervalSince1970))]") == true, "\(setup.programRuns)")
    }

    @Test func aRestartNeitherAlertsAgainNorForgetsTheRecovery() async throws {
        let setup = try Setup()
        await fetch(try setup.coordinator(), times: 3)
        #expect(setup.programRuns.count == 1)
        let restarted = try setup.coordinator()
        await fetch(restarted, times: 2)
        #expect(setup.programRuns.count == 1, "the same streak after a restart: \(setup.programRuns)")
        setup.setFailing(false)
        await fetch(restarted)
        #expect(setup.programRuns.count == 2 && setup.programRuns.last?.contains("recovered") == true, "\(setup.programRuns)")
    }

    @Test func aBurstOfFailuresStaysWithinTheGlobalLimit() async throws {
        let names = (1...12).map { "h\($0)" }
        let setup = try Setup(names: names, main: "alert_after = 1", schedule: "minimum")
        let coordinator = try setup.coordinator()
        await coordinator.runDue()
        await coordinator.alertsSettled()
        #expect(setup.programRuns.count == Defaults.alertMaxPerHour, "\(setup.programRuns)")
        let failing = setup.log.entries(with: MessageID.handlerFailing)
        #expect(failing.count == names.count, "every failing handler is journaled")
        #expect(failing.filter { $0.metadata["alert_program"]?.hasPrefix("not run: ") == true }.count == 2)
        let line = await coordinator.statusLine()
        #expect(line.hasPrefix("12 handlers, 12 failing"), "\(line)")
    }

    @Test func aFlappingHandlerAlertsOncePerHour() async throws {
        let setup = try Setup(main: "alert_after = 1")
        let coordinator = try setup.coordinator()
        await fetch(coordinator)
        setup.setFailing(false)
        await fetch(coordinator)
        setup.setFailing(true)
        await fetch(coordinator)
        setup.setFailing(false)
        await fetch(coordinator)
        #expect(setup.programRuns.map { $0.split(separator: " ")[1] } == ["failing", "recovered"], "\(setup.programRuns)")
        let failing = setup.log.entries(with: MessageID.handlerFailing)
        #expect(failing.count == 2 && failing.last?.metadata["alert_program"]?.contains("at most one per 1h per handler") == true,
                "\(failing.map(\.metadata))")
        #expect(setup.log.entries(with: MessageID.handlerRecovered).count == 2)
    }

    @Test func aHandlersOwnOnFailureWinsAndAnEmptyOneRunsNothing() async throws {
        let own = try Setup(keys: #"on_failure = ["/bin/sh", "-c", "echo own >> \"$0\"", "OWN"]"#.replacingOccurrences(of: "OWN", with: "/dev/null"))
        let coordinator = try own.coordinator()
        await fetch(coordinator, times: 3)
        #expect(own.programRuns.isEmpty, "the handler's own program ran instead of the main file's")
        // And a program did run: the handler's own (it writes to /dev/null).
        #expect(own.log.entries(with: MessageID.handlerFailing).first?.metadata["alert_program"] == "run")
        let none = try Setup(keys: "on_failure = []")
        let other = try none.coordinator()
        await fetch(other, times: 3)
        #expect(none.programRuns.isEmpty)
        #expect(none.log.entries(with: MessageID.handlerFailing).first?.metadata["alert_program"] == "not run: no on_failure is configured")
    }

    @Test func aHangingAlertIsStoppedAtItsDeadlineAndNeverHoldsUpAFetch() async throws {
        let setup = try Setup(main: "kill_grace = \"200ms\"", keys: "deadline = \"1s\"",
                              alert: #"["/bin/sh", "-c", "trap '' TERM; sleep 30"]"#)
        let coordinator = try setup.coordinator()
        let clock = ContinuousClock()
        _ = await coordinator.fetch("h", trigger: .manual)
        _ = await coordinator.fetch("h", trigger: .manual)
        let fetchTime = await clock.measure { _ = await coordinator.fetch("h", trigger: .manual) }
        #expect(fetchTime < .milliseconds(900), "the third failure's fetch waited for its alert: \(fetchTime)")
        let settleTime = await clock.measure { await coordinator.alertsSettled() }
        #expect(settleTime < .seconds(10), "the alert program outlived its deadline: \(settleTime)")
        #expect(setup.log.entries.contains { $0.message.contains("on_failure (failing) ran past its deadline") },
                "\(setup.log.entries.map(\.message))")
        setup.setFailing(false)
        #expect(await coordinator.fetch("h", trigger: .manual)?.result == .newData, "the daemon goes on")
    }
}
