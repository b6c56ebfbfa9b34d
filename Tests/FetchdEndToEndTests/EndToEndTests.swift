import FetchdControl
import FetchdSnapshots
import FetchdState
import FetchdTestSupport
import Foundation
import Testing

/// The real binaries, end to end: start fetchd on a temp config, watch it fetch, drive it
/// with fetchctl, stop it, start it again.
@Suite(.serialized)
struct EndToEndTests {
    static let handlers = """
        [[handler]]
        name = "clock"
        kind = "exec"
        command = ["/bin/sh", "-c", "date +%s%N > \\"$FETCHD_OUTPUT\\""]
        min_interval = "1h"
        deadline = "5s"

        [[handler]]
        name = "local-file"
        kind = "http"
        url = "file://%FILE%"
        allow_file_urls = true
        min_interval = "never"

        [[handler]]
        name = "broken name!"
        kind = "exec"
        command = ["/bin/true"]
        """

    private func decode<T: Decodable>(_ type: T.Type, _ output: String) throws -> T {
        try ControlProtocol.decoder().decode(T.self, from: Data(output.utf8))
    }

    @Test func daemonFetchesServesStatusAndSurvivesRestart() async throws {
        let source = try TemporaryDirectory("e2e-source")
        defer { source.remove() }
        let file = try source.write("hello from a file\n", to: "page.txt")
        let daemon = try DaemonProcess(handlers: Self.handlers.replacingOccurrences(of: "%FILE%", with: file))
        try await daemon.start()

        // The never-run exec handler is due at once; its snapshot appears with matching metadata.
        let latest = daemon.cachePath + "/clock/latest"
        #expect(await waitUntil(timeoutSeconds: 15) { FileManager.default.fileExists(atPath: latest + "/meta.json") })
        let metadata = try SnapshotMetadata.decode(try Data(contentsOf: URL(fileURLWithPath: latest + "/meta.json")))
        #expect(try FileDigest.sha256(ofFile: latest + "/content").digest == metadata.sha256)
        #expect(metadata.trigger == "timer")

        // Status: both valid handlers, the invalid one reported with its file and line.
        let status = try await daemon.fetchctlWithoutBlocking(["status", "--json"])
        #expect(status.status == 0, "\(status.output)")
        let report = try decode(StatusReport.self, status.output)
        #expect(report.handlers.map(\.name) == ["clock", "local-file"])
        #expect(report.handlers[0].lastResult == "newData")
        #expect(report.handlers[0].snapshotPath == latest + "/content")
        #expect(report.handlers[1].nextEligibleAt == nil, "min_interval = never is never scheduled")
        let problem = try #require(report.configProblems.first)
        #expect(problem.file.hasSuffix("handlers.d/test.toml") && problem.line == 16 && problem.key == "name")

        // Manual fetches: new data, then identical content is noData.
        let first = try await daemon.fetchctlWithoutBlocking(["fetch", "local-file", "--wait", "--json"])
        #expect(try decode(FetchReport.self, first.output).result == "newData", "\(first.output)")
        let second = try await daemon.fetchctlWithoutBlocking(["fetch", "local-file", "--wait"])
        #expect(second.status == 0 && second.output.contains("local-file: noData"), "\(second.output)")
        #expect(try String(contentsOfFile: daemon.cachePath + "/local-file/latest/content", encoding: .utf8) == "hello from a file\n")
        let unknown = try await daemon.fetchctlWithoutBlocking(["fetch", "nope"])
        #expect(unknown.status == 1 && unknown.output.contains("no handler named \"nope\""))

        let history = try decode([HistoryEntry].self, try await daemon.fetchctlWithoutBlocking(["history", "local-file", "--json"]).output)
        #expect(history.map(\.result) == ["noData", "newData"])
        #expect(history.allSatisfy { $0.trigger == "manual" })

        // A one-shot run on the running daemon's cache is refused, naming the daemon (opening the
        // cache would clear the staging folder of the daemon's fetches), and the daemon goes on.
        let concurrent = try await ChildProcess.runWithoutBlocking(TestBinaries.path(of: "fetchd"), ["--config", daemon.configPath, "--once"])
        #expect(concurrent.status == 75, "\(concurrent.output)")  // EX_TEMPFAIL
        let refusal = "cannot start: another fetchd (pid \(daemon.process.processIdentifier)) is using the cache"
        #expect(concurrent.output.components(separatedBy: refusal).count == 2, "said once: \(concurrent.output)")
        #expect(try await daemon.fetchctlWithoutBlocking(["status"]).status == 0)

        // SIGTERM: a clean exit with status 0; a restart keeps the history.
        let stopped = daemon.stopAndReadLog()
        #expect(stopped.status == 0, "\(stopped.log)")
        expectClosedCleanly(daemon)
        #expect(stopped.log.contains("broken name!"), "the invalid handler was not logged")
        // Restart (as a one-shot run): nothing recorded before the stop is lost.
        let rerun = try ChildProcess.run(TestBinaries.path(of: "fetchd"), ["--config", daemon.configPath, "--once"])
        #expect(rerun.status == 0, "\(rerun.output)")
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        #expect(try state.integrityCheck())
        #expect(try state.history(of: "local-file").count == 2)
        #expect(try state.history(of: "clock").count == 1, "min_interval = 1h must stop a second fetch on restart")
        let check = try ChildProcess.run(TestBinaries.path(of: "fetchctl"), ["check-config", daemon.configPath])
        #expect(check.status == 1 && check.output.contains("test.toml:16"), "\(check.output)")
    }

    @Test func checkConfigAndBadMainFileFailClearly() throws {
        let directory = try TemporaryDirectory("e2e-bad")
        defer { directory.remove() }
        let main = try directory.write("max_concurrent = \"four\"\n", to: "fetchd.toml")
        let check = try ChildProcess.run(TestBinaries.path(of: "fetchd"), ["--check-config", "--config", main])
        #expect(check.status == 78, "fetchd would not start with it: \(check.output)")
        #expect(check.output.contains("fetchd.toml:1: key \"max_concurrent\": expected an integer"), "\(check.output)")
        let start = try ChildProcess.run(TestBinaries.path(of: "fetchd"), ["--config", main])
        #expect(start.status == 78, "a bad main file must stop start-up (EX_CONFIG)")
        #expect(start.output.contains("cannot start"))
        let missing = try ChildProcess.run(TestBinaries.path(of: "fetchd"), ["--config", directory.file("nope.toml")])
        #expect(missing.status == 78 && missing.output.contains("does not exist"), "\(missing.output)")
        // A broken handler file only leaves that handler out: fetchd would start (1, not 78).
        try "max_concurrent = 4\n".write(toFile: main, atomically: true, encoding: .utf8)
        _ = try directory.write("[[handler]]\nname = \"bad\"\nkind = \"http\"\nurl = \"ftp://example.invalid/\"\n",
                                to: "handlers.d/bad.toml")
        let handlerOnly = try ChildProcess.run(TestBinaries.path(of: "fetchd"), ["--check-config", "--config", main])
        #expect(handlerOnly.status == 1 && handlerOnly.output.contains("bad.toml:4"), "\(handlerOnly.output)")
        // A missing main file is a problem, unless --missing-config-ok (as the shipped unit starts).
        let absent = directory.file("absent/fetchd.toml")
        let required = try ChildProcess.run(TestBinaries.path(of: "fetchd"), ["--check-config", "--config", absent])
        #expect(required.status == 78, "\(required.output)")
        let optional = try ChildProcess.run(TestBinaries.path(of: "fetchd"), ["--check-config", "--missing-config-ok", "--config", absent])
        #expect(optional.status == 0, "\(optional.output)")
    }

    /// `fetchd --check-config` and `fetchctl check-config` give the same answer, words and exit
    /// status; and a handler file checked from inside its handlers.d folder keeps that context.
    @Test func bothCheckersGiveTheSameAnswer() throws {
        let directory = try TemporaryDirectory("e2e-check")
        defer { directory.remove() }
        let main = try directory.write("max_concurrent = \"four\"\n", to: "fetchd.toml")
        _ = try directory.write("max_concurrent = 4\n\n[[handler]]\nname = \"spaced\"\nkind = \"http\"\nurl = \"https://example.com/a b\"\n",
                                to: "handlers.d/spaced.toml")
        let fetchd = try ChildProcess.run(TestBinaries.path(of: "fetchd"), ["--check-config", "--config", main])
        let fetchctl = try ChildProcess.run(TestBinaries.path(of: "fetchctl"), ["check-config", main])
        #expect(fetchd.status == 78 && fetchd.status == fetchctl.status, "\(fetchd.output)\n\(fetchctl.output)")
        #expect(fetchd.output == fetchctl.output)
        #expect(fetchd.output.contains("spaced.toml:6: key \"url\": libcurl cannot parse"), "\(fetchd.output)")
        // From inside the folder, by a relative name: a handler file, whose top-level key is a problem.
        let inside = try ChildProcess.run("/bin/sh", ["-c", "cd '\(directory.file("handlers.d"))' && exec '\(TestBinaries.path(of: "fetchctl"))' check-config spaced.toml"])
        #expect(inside.status == 1 && inside.output.contains("a handler file holds only [[handler]] tables"), "\(inside.output)")
    }

    @Test func fetchctlExplainsAMissingDaemon() throws {
        let result = try ChildProcess.run(TestBinaries.path(of: "fetchctl"), ["status", "--socket", "/nonexistent/fetchd.sock"])
        #expect(result.status == 1)
        #expect(result.output.contains("fetchd is not running"), "\(result.output)")
    }

    /// A fresh install has no handler: status says so, and where to add one.
    @Test func statusSaysWhereToAddAHandlerWhenThereIsNone() async throws {
        let daemon = try DaemonProcess(handlers: "", heartbeat: "1h")
        try await daemon.start()
        let status = try daemon.fetchctl(["status"])
        #expect(status.status == 0)
        #expect(status.output.contains("no handlers configured: add a handler file")
                    && status.output.contains(daemon.directory.file("etc/handlers.d")), "\(status.output)")
        #expect(!status.output.contains("HANDLER"), "an empty table says nothing: \(status.output)")
        // The common options may come before the command, as systemctl takes them.
        let before = try ChildProcess.run(TestBinaries.path(of: "fetchctl"), ["--socket", daemon.socketPath, "status"])
        #expect(before.status == 0 && before.output.contains("no handlers configured"), "\(before.output)")
    }

    /// A program's output reaches the admin's terminal through fetchctl as text, never as
    /// escape sequences the terminal would obey.
    @Test func fetchctlShowsControlCharactersInsteadOfSendingThem() async throws {
        let daemon = try DaemonProcess(handlers: """
            [[handler]]
            name = "rude"
            kind = "exec"
            command = ["/bin/sh", "-c", "printf '\\\\033]0;owned\\\\007\\\\033[2Jgone' >&2; exit 3"]
            min_interval = "never"
            """, heartbeat: "1h")
        try await daemon.start()
        let fetch = try await daemon.fetchctlWithoutBlocking(["fetch", "rude", "--wait"])
        let history = try await daemon.fetchctlWithoutBlocking(["history", "rude"])
        for output in [fetch.output, history.output] {
            #expect(!output.unicodeScalars.contains("\u{1B}") && !output.unicodeScalars.contains("\u{07}"), "\(output.debugDescription)")
            #expect(output.contains("\\u{1B}]0;owned\\u{7}\\u{1B}[2Jgone"), "\(output.debugDescription)")
        }
    }

    /// The next wake follows min_interval, not the (much longer) heartbeat.
    @Test func minIntervalDrivesTheNextWakeNotTheHeartbeat() async throws {
        let daemon = try DaemonProcess(handlers: """
            [[handler]]
            name = "often"
            kind = "exec"
            command = ["/bin/sh", "-c", "date +%s%N > \\"$FETCHD_OUTPUT\\""]
            min_interval = "1s"
            """, heartbeat: "1h")
        try await daemon.start()
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        #expect(await waitUntil(timeoutSeconds: 15) { (try? state.history(of: "often", limit: 10).count) ?? 0 >= 3 },
                "with a 1 h heartbeat and min_interval = 1s, three fetches should come within seconds")
        daemon.stopAndReadLog()
    }

    @Test func fetchctlUsedReportsAUseAndShowsThePlan() async throws {
        let daemon = try DaemonProcess(handlers: """
            [[handler]]
            name = "news"
            kind = "exec"
            command = ["/bin/sh", "-c", "echo news > \\"$FETCHD_OUTPUT\\""]
            min_interval = "10m"
            usage = ["explicit"]
            """)
        try await daemon.start()
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        #expect(await waitUntil(timeoutSeconds: 15) { (try? state.history(of: "news", limit: 1).count) == 1 })
        let used = try await daemon.fetchctlWithoutBlocking(["used", "news"])
        #expect(used.status == 0 && used.output.contains("news: use recorded; next fetch"), "\(used.output)")
        #expect(try state.usage.uses(of: "news", since: .distantPast).map(\.source) == ["explicit"])
        let unknown = try await daemon.fetchctlWithoutBlocking(["used", "nope"])
        #expect(unknown.status == 1 && unknown.output.contains("no handler named \"nope\""), "\(unknown.output)")
        let status = try await daemon.fetchctlWithoutBlocking(["status"])
        #expect(status.output.contains("planned from usage:\n  news: cold start"), "\(status.output)")
        let usage = try await daemon.fetchctlWithoutBlocking(["usage", "news"])
        #expect(usage.status == 0 && usage.output.contains("news: usage sources explicit; 1 day(s) of use remembered"),
                "\(usage.output)")
        #expect(usage.output.contains("\nSun  ") && usage.output.contains("  explicit\n"), "\(usage.output)")
        // One use: what is assumed after a use is still about the population's (likelier from
        // 30 minutes to a few hours after it; the figure is the prior's, bench/population_prior.py).
        let risk = usage.output.components(separatedBy: "× 45 min to 60 min").first?.split(separator: " ").last
        #expect(usage.output.contains("after a use, the next one is (against its time of day alone) 1."), "\(usage.output)")
        #expect(risk.flatMap { Double($0) }.map { $0 > 1.1 } == true, "\(usage.output)")
        let lines = usage.output.split(separator: "\n")
        // The hour of the use is the darkest cell of its day's row.
        #expect(lines.contains { $0.contains("██") }, "\(usage.output)")
        // The simulator replays the uses recorded here, with the handler's own limits.
        let simulated = try ChildProcess.run(TestBinaries.path(of: "fetchctl"), [
            "simulate", "--from-state", "--config", daemon.configPath, "--handler", "news", "--json"])
        #expect(simulated.status == 0 && simulated.output.contains("\"uses\" : 1"), "\(simulated.output)")
        let missing = try ChildProcess.run(TestBinaries.path(of: "fetchctl"), ["simulate", "--from-state"])
        #expect(missing.status == 1 && missing.output.contains("--from-state needs --handler NAME"), "\(missing.output)")
        // Each policy the bench compares runs; an unknown one is named with the known ones.
        for policy in ["learned", "time-of-day", "profile"] {
            let run = try ChildProcess.run(TestBinaries.path(of: "fetchctl"), [
                "simulate", "--from-state", "--config", daemon.configPath, "--handler", "news", "--policy", policy])
            #expect(run.status == 0, "\(policy): \(run.output)")
        }
        let unknownPolicy = try ChildProcess.run(TestBinaries.path(of: "fetchctl"), [
            "simulate", "--from-state", "--config", daemon.configPath, "--handler", "news", "--policy", "oracle"])
        #expect(unknownPolicy.status == 1 && unknownPolicy.output.contains("--policy \"oracle\" is not a policy; expected one of learned, time-of-day, profile"),
                "\(unknownPolicy.output)")
        daemon.stopAndReadLog()
    }

    @Test func readingTheSnapshotCountsAsAUse() async throws {
        let daemon = try DaemonProcess(handlers: """
            [[handler]]
            name = "news"
            kind = "exec"
            command = ["/bin/sh", "-c", "cat \\"$FETCHD_PREVIOUS\\" > /dev/null 2>&1; echo news > \\"$FETCHD_OUTPUT\\""]
            min_interval = "1h"
            usage = ["reads"]
            """)
        try await daemon.start()
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        let content = daemon.cachePath + "/news/latest/content"
        #expect(await waitUntil(timeoutSeconds: 15) { FileManager.default.fileExists(atPath: content) })
        // fetchd's own work records nothing: a fetch whose program reads its previous snapshot
        // (FETCHD_PREVIOUS is latest/content), and status reading meta.json.
        let again = try await daemon.fetchctlWithoutBlocking(["fetch", "news", "--wait"])
        #expect(again.status == 0, "\(again.output)")
        _ = try await daemon.fetchctlWithoutBlocking(["status"])
        _ = try Data(contentsOf: URL(fileURLWithPath: daemon.cachePath + "/news/latest/meta.json"))
        try await Task.sleep(for: .milliseconds(2500))  // past the 2 s after a run when opens are the handler's
        #expect(try state.usage.uses(of: "news", since: .distantPast).isEmpty)
        // Another process reads the content: one use, and a second read in the same session folds into it.
        #expect(try String(contentsOfFile: content, encoding: .utf8) == "news\n")
        #expect(await waitUntil(timeoutSeconds: 10) { (try? state.usage.uses(of: "news", since: .distantPast).count) == 1 })
        _ = try String(contentsOfFile: content, encoding: .utf8)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try state.usage.uses(of: "news", since: .distantPast).map(\.source) == ["reads"])
        daemon.stopAndReadLog()
    }

    /// fetchd raises its soft file-descriptor limit to the hard one (DescriptorLimit), and gives
    /// its programs the soft limit it started with.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit"), "needs prlimit (util-linux)"))
    func programsGetTheSoftLimitFetchdStartedWith() async throws {
        let daemon = try DaemonProcess(handlers: """
            [[handler]]
            name = "limit"
            kind = "exec"
            command = ["/bin/sh", "-c", "ulimit -n > \\"$FETCHD_OUTPUT\\""]
            """)
        let result = try await ChildProcess.runWithoutBlocking(
            "/usr/bin/prlimit", ["--nofile=1000:", TestBinaries.path(of: "fetchd"), "--config", daemon.configPath, "--once", "--log-level", "debug"])
        #expect(result.status == 0, "\(result.output)")
        #expect(try String(contentsOfFile: daemon.cachePath + "/limit/latest/content", encoding: .utf8) == "1000\n")
        #expect(result.output.contains("file-descriptor limit raised from 1000 to"), "\(result.output)")
    }

    @Test func onceRunsDueHandlersAndExits() throws {
        let daemon = try DaemonProcess(handlers: """
            [[handler]]
            name = "one"
            kind = "exec"
            command = ["/bin/sh", "-c", "echo once > \\"$FETCHD_OUTPUT\\""]
            """)
        let result = try ChildProcess.run(TestBinaries.path(of: "fetchd"), ["--config", daemon.configPath, "--once"])
        #expect(result.status == 0, "\(result.output)")
        #expect(try String(contentsOfFile: daemon.cachePath + "/one/latest/content", encoding: .utf8) == "once\n")
        expectClosedCleanly(daemon)
    }

    /// The state database was closed before the process ended: its log checkpointed into the
    /// file and emptied (`StateStore.close`), so the next start has no log to replay.
    private func expectClosedCleanly(_ daemon: DaemonProcess, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(FileManager.default.fileExists(atPath: daemon.directory.file("state/state.sqlite")), sourceLocation: sourceLocation)
        let wal = daemon.directory.file("state/state.sqlite-wal")
        let bytes = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
        #expect(bytes == 0, "the WAL still holds \(bytes) bytes", sourceLocation: sourceLocation)
    }
}
