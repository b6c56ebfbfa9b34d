import FetchdCore
import FetchdHandlers
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The built `fetchd-runas` serving one connection (a socket pair on its stdin, as systemd's
/// `Accept=yes` hands it one), and fetchd through it: programs run as their users, a stop ends
/// the program, fetchd's deadline expires it, and its folder is gone after. The refusals are
/// asked in a real systemd (FetchdRunasTests), where the socket's owner and mode count too.
@Suite(.serialized, .enabled(if: getuid() == 0, "needs root: fetchd-runas switches users"))
struct RunasHelperTests {
    static let handlers = """
        [[handler]]
        name = "who"
        kind = "exec"
        user = "nobody"
        command = ["/bin/sh", "-c", "id -un > \\"$FETCHD_OUTPUT\\"; echo \\"$FETCHD_TRIGGER $FETCHD_PUSH_DATA\\" >> \\"$FETCHD_OUTPUT\\""]

        [[handler]]
        name = "default"
        kind = "exec"
        command = ["/bin/sh", "-c", "id -un > \\"$FETCHD_OUTPUT\\""]

        [[handler]]
        name = "download"
        kind = "transfer"
        url = "http://127.0.0.1:9/file"
        min_interval = "never"
        on_complete = ["/bin/sh", "-c", "[ \\"$(id -un)\\" = daemon ] && [ \\"$FETCHD_SNAPSHOT\\" = \\"$0\\" ] && [ -r \\"$0\\" ]"]

        [[handler]]
        name = "previous"
        kind = "exec"
        user = "nobody"
        command = ["/bin/sh", "-c", "cat \\"$FETCHD_PREVIOUS\\" > \\"$FETCHD_OUTPUT\\"; echo \\"$FETCHD_PREVIOUS\\" >> \\"$FETCHD_OUTPUT\\""]

        [[handler]]
        name = "as-root"
        kind = "exec"
        user = "root"
        command = ["/bin/true"]

        [[handler]]
        name = "slow"
        kind = "exec"
        user = "nobody"
        deadline = "2s"
        command = ["/bin/sh", "-c", "exec sleep 101"]

        [[handler]]
        name = "alerting"
        kind = "http"
        url = "http://127.0.0.1:9/"
        on_failure = ["/bin/sh", "-c", "echo \\"$(id -un) $FETCHD_HANDLER $FETCHD_ALERT $FETCHD_RESULT $FETCHD_FAILURES [$FETCHD_LAST_SUCCESS] $FETCHD_REASON\\" >> \\"$0\\"", "ALERTS"]
        """

    /// Where the alerting handler's `on_failure` writes, in `directory`.
    static let alertsFile = "alerts.log"

    /// A configuration (root's, as fetchd-runas requires), a folder for the runs' workspaces.
    struct Setup {
        let directory: TemporaryDirectory
        let configPath: String
        var workRoot: String { directory.file("work") }

        init() throws {
            directory = try TemporaryDirectory("fetchd-runas")
            let handlers = RunasHelperTests.handlers.replacingOccurrences(of: "ALERTS", with: directory.file(RunasHelperTests.alertsFile))
            configPath = try TestConfig.write(in: directory, handlers: handlers)
            // Written by the alert program as its user.
            FileManager.default.createFile(atPath: directory.file(RunasHelperTests.alertsFile), contents: Data())
            chmod(directory.file(RunasHelperTests.alertsFile), 0o666)
            try FileManager.default.createDirectory(atPath: directory.file("work"), withIntermediateDirectories: true)
            // The users' programs pass through the test's folders (mkdtemp makes them 0700).
            chmod(directory.path, 0o711)
        }
    }

    /// Starts fetchd-runas on one end of a new socket pair; the other end, and the process.
    static func start(_ setup: Setup, defaultUser: String? = "daemon") throws -> (RunasConnection, Process) {
        var ends: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestBinaries.path(of: "fetchd-runas"))
        process.arguments = ["--config", setup.configPath, "--work-root", setup.workRoot]
            + (defaultUser.map { ["--default-user", $0] } ?? [])
        process.standardInput = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
        try process.run()
        return (RunasConnection(adopting: ends[0]), process)
    }

    static func reply(on connection: RunasConnection) throws -> (RunasReply, String?) {
        let message = try #require(try connection.receive(limit: RunasReply.maxBytes, wait: true))
        let reply = try JSONDecoder().decode(RunasReply.self, from: message.bytes)
        guard message.descriptor >= 0 else { return (reply, nil) }
        defer { close(message.descriptor) }
        return (reply, try FileHandle(fileDescriptor: message.descriptor).readToEnd().map { String(decoding: $0, as: UTF8.self) })
    }

    @Test func theConfiguredProgramRunsAsItsUserAndItsFolderIsGoneAfter() throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        for (handler, expected) in [("who", "nobody\npush {\"a\":1}\n"), ("default", "daemon\n")] {
            let (connection, process) = try Self.start(setup)
            var request = RunasRequest(handler: handler, program: .command, trigger: .push, seconds: 10, wallDeadline: 0)
            request.pushData = "{\"a\":1}"
            try connection.send(request)
            let (reply, output) = try Self.reply(on: connection)
            #expect(reply.result == .newData && reply.outputBytes == expected.utf8.count, "\(reply)")
            #expect(output == expected)
            process.waitUntilExit()
            #expect(try FileManager.default.contentsOfDirectory(atPath: setup.workRoot).isEmpty)
        }
    }

    /// A transfer's `on_complete` gets the published file, which must be in the handler's folder.
    @Test func onCompleteRunsOnTheHandlersPublishedFileOnly() throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let folder = setup.directory.file("cache/download")
        try Self.publish("data", in: folder, version: "v1")
        chmod(setup.directory.file("cache"), 0o755)
        let newest = folder + "/versions/v1/content"
        for (snapshot, expected) in [(newest, RunasReply.Result.newData), ("/etc/passwd", .refused),
                                     (folder + "/latest/content", .refused), (folder + "/../download/versions/v1/content", .refused)] {
            #expect(try Self.onComplete(setup, snapshot: snapshot).result == expected, "\(snapshot)")
        }
        // fetchd owns the cache: a folder there pointed elsewhere is not followed.
        let elsewhere = setup.directory.file("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere + "/v1", withIntermediateDirectories: true)
        try "secret\n".write(toFile: elsewhere + "/v1/content", atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: folder + "/versions")
        try FileManager.default.createSymbolicLink(atPath: folder + "/versions", withDestinationPath: elsewhere)
        let reply = try Self.onComplete(setup, snapshot: newest)
        #expect(reply.result == .refused && (reply.reason ?? "").contains("without following links"), "\(reply)")
    }

    /// `FETCHD_PREVIOUS` is a copy fetchd-runas made of the newest snapshot it found itself.
    @Test func thePreviousSnapshotIsACopyFetchdRunasFoundItself() throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        try Self.publish("before", in: setup.directory.file("cache/previous"), version: "v1")
        chmod(setup.directory.file("cache"), 0o755)
        let (connection, process) = try Self.start(setup)
        try connection.send(RunasRequest(handler: "previous", program: .command, trigger: .manual, seconds: 10, wallDeadline: 0))
        let (reply, output) = try Self.reply(on: connection)
        #expect(reply.result == .newData, "\(reply)")
        #expect(output?.hasPrefix("before\n") == true && output?.contains("/cache/") == false, "\(output ?? "")")
        process.waitUntilExit()
    }

    /// A handler that would run as root, or as a user who may ask fetchd-runas, is refused.
    @Test func aProgramNeverRunsAsRootOrAsAnAsker() throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let (connection, process) = try Self.start(setup)
        try connection.send(RunasRequest(handler: "as-root", program: .command, trigger: .manual, seconds: 10, wallDeadline: 0))
        let (reply, _) = try Self.reply(on: connection)
        #expect(reply.result == .refused && (reply.reason ?? "").contains("never runs as root"), "\(reply)")
        process.waitUntilExit()
    }

    /// Writes `content` as version `version` of the handler folder `folder`, with `latest`
    /// pointing at it as fetchd makes it.
    static func publish(_ content: String, in folder: String, version: String) throws {
        try FileManager.default.createDirectory(atPath: folder + "/versions/" + version, withIntermediateDirectories: true)
        try (content + "\n").write(toFile: folder + "/versions/" + version + "/content", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: folder + "/latest", withDestinationPath: "versions/" + version)
    }

    /// fetchd-runas's answer to `download`'s on_complete for `snapshot`.
    static func onComplete(_ setup: Setup, snapshot: String) throws -> RunasReply {
        let (connection, process) = try Self.start(setup)
        defer { process.waitUntilExit() }
        var request = RunasRequest(handler: "download", program: .onComplete, trigger: .manual, seconds: 10, wallDeadline: 0)
        request.snapshot = snapshot
        try connection.send(request)
        let (reply, output) = try Self.reply(on: connection)
        #expect(output == nil)
        return reply
    }

    @Test func withoutADefaultUserAHandlerWithoutUserIsRefused() throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let (connection, process) = try Self.start(setup, defaultUser: nil)
        try connection.send(RunasRequest(handler: "default", program: .command, trigger: .manual, seconds: 10, wallDeadline: 0))
        let (reply, output) = try Self.reply(on: connection)
        #expect(reply.result == .refused && (reply.reason ?? "").contains("--default-user"), "\(reply)")
        #expect(output == nil)
        process.waitUntilExit()
    }

    /// An alert request: `on_failure` of `handler` with the alert's data, `result` as given.
    static func alertRequest(_ handler: String, result: String = "failed") -> RunasRequest {
        var request = RunasRequest(handler: handler, program: .onFailure, trigger: .timer, seconds: 10, wallDeadline: 0)
        request.failureAlert = FailureAlert(event: .failing, result: result, reason: "connection refused", failures: 3,
                                            lastSuccess: 1_700_000_000)
        return request
    }

    @Test func onFailureRunsTheConfiguredAlertWithItsData() throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let (connection, process) = try Self.start(setup)
        try connection.send(Self.alertRequest("alerting"))
        let (reply, output) = try Self.reply(on: connection)
        #expect(reply.result == .newData && output == nil, "\(reply)")
        process.waitUntilExit()
        let written = try String(contentsOfFile: setup.directory.file(Self.alertsFile), encoding: .utf8)
        #expect(written == "daemon alerting failing failed 3 [1700000000] connection refused\n", "\(written)")
    }

    @Test func onFailureIsRefusedWithoutAConfiguredAlertOrWithBadData() throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        for (request, why) in [(Self.alertRequest("who"), "has no on_failure"),
                               (Self.alertRequest("alerting", result: "newData"), "is not one of failed, expired"),
                               ({ var plain = Self.alertRequest("who"); plain.program = .command; return plain }(),
                                "go with on_failure only")] {
            let (connection, process) = try Self.start(setup)
            try connection.send(request)
            let (reply, _) = try Self.reply(on: connection)
            #expect(reply.result == .refused && (reply.reason ?? "").contains(why), "\(reply)")
            process.waitUntilExit()
        }
        #expect(try String(contentsOfFile: setup.directory.file(Self.alertsFile), encoding: .utf8).isEmpty)
    }

    @Test func aStopMessageEndsTheProgramAtOnce() throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let (connection, process) = try Self.start(setup)
        try connection.send(RunasRequest(handler: "slow", program: .command, trigger: .manual, seconds: 60, wallDeadline: 0))
        Thread.sleep(forTimeInterval: 0.5)
        let started = Date()
        try connection.send(RunasStop())
        let (reply, _) = try Self.reply(on: connection)
        #expect(reply.result == .failed && reply.reason == "stopped: fetchd asked", "\(reply)")
        #expect(Date().timeIntervalSince(started) < 5)
        process.waitUntilExit()
    }

    /// fetchd with `--runas-socket`, fetchd-runas behind systemd-socket-activate: the results are
    /// fetchd's as if it ran the programs, a program past its deadline is expired and ended,
    /// and a failing handler's alert runs there too.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate")))
    func fetchdRunsItsProgramsThroughFetchdRunas() async throws {
        let alerts = try TemporaryDirectory("fetchd-runas-alerts")
        defer { alerts.remove() }
        chmod(alerts.path, 0o711)
        let alertsFile = try alerts.write("", to: Self.alertsFile)
        chmod(alertsFile, 0o666)
        let daemon = try DaemonProcess(handlers: Self.handlers.replacingOccurrences(of: "ALERTS", with: alertsFile),
                                       extraMain: "alert_after = 1")
        defer { daemon.directory.remove() }
        chmod(daemon.directory.path, 0o711)
        let socket = daemon.directory.file("runas.sock")
        // Spawned, not a Foundation Process: the activator's own children must stay its own.
        let activator = try spawnProcess(["/usr/bin/systemd-socket-activate", "--seqpacket", "--accept", "--inetd", "-l", socket,
                                          TestBinaries.path(of: "fetchd-runas"), "--config", daemon.configPath,
                                          "--default-user", "daemon"])
        defer {
            kill(activator, SIGKILL)
            waitpid(activator, nil, 0)
        }
        #expect(await waitUntil(timeoutSeconds: 10) { FileManager.default.fileExists(atPath: socket) })
        let started = Date()
        let result = try await ChildProcess.runWithoutBlocking(TestBinaries.path(of: "fetchd"),
                                                               ["--config", daemon.configPath, "--once", "--runas-socket", socket])
        #expect(Date().timeIntervalSince(started) < 15, "the slow handler was not ended at its deadline")
        #expect(try String(contentsOfFile: daemon.cachePath + "/who/latest/content", encoding: .utf8).hasPrefix("nobody\ntimer"))
        #expect(try String(contentsOfFile: daemon.cachePath + "/default/latest/content", encoding: .utf8) == "daemon\n")
        #expect(result.output.contains("slow: expired"), "\(result.output)")
        let sleeping = try ChildProcess.run("/usr/bin/pgrep", ["-f", "^sleep 101$"])
        #expect(sleeping.status == 1, "the expired program is still running: \(sleeping.output)")
        let alerted = try String(contentsOfFile: alertsFile, encoding: .utf8)
        #expect(alerted.hasPrefix("daemon alerting failing failed 1 [] "), "\(alerted)")
    }
}
