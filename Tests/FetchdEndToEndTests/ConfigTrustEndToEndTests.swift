import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A program another user owns, named by a handler file: `fetchd --check-config` names the
/// file, line and key, and a reload to it keeps the configuration running.
@Suite(.enabled(if: geteuid() == 0, "needs root to give a program to another user"))
struct ConfigTrustEndToEndTests {
    /// An exec handler `a` run only on request, running `program`.
    static func handler(_ program: String) -> String {
        "[[handler]]\nname = \"a\"\nkind = \"exec\"\nmin_interval = \"never\"\ncommand = [\"\(program)\", \"-c\", \"echo a > \\\"$FETCHD_OUTPUT\\\"\"]\n"
    }

    @Test func anUntrustedProgramIsNamedAndAReloadKeepsThePreviousConfiguration() async throws {
        let daemon = try DaemonProcess(handlers: Self.handler("/bin/sh"))
        defer { daemon.directory.remove() }
        let program = try daemon.directory.write("#!/bin/sh\nexit 0\n", to: "bin/prog")
        chmod(program, 0o755)
        chmod(daemon.directory.file("bin"), 0o755)
        chown(program, 65534, 65534)
        try await daemon.start()

        let file = try daemon.directory.write(Self.handler(program), to: "etc/handlers.d/test.toml")
        let check = try await ChildProcess.runWithoutBlocking(TestBinaries.path(of: "fetchd"),
                                                              ["--check-config", "--config", daemon.configPath])
        #expect(check.status == 78, "\(check.output)")
        #expect(check.output.contains("\(file):5: key \"command\": the program may not be trusted: \(program) is owned by uid 65534"),
                "\(check.output)")
        let reload = try await daemon.fetchctlWithoutBlocking(["reload"])
        #expect(reload.status != 0 && reload.output.contains("keeps the previous one"), "\(reload.output)")
        // The handler still runs the program it was loaded with.
        let fetch = try await daemon.fetchctlWithoutBlocking(["fetch", "--wait", "a"])
        #expect(fetch.status == 0, "\(fetch.output)")
        let (_, log) = await daemon.stopWithoutBlocking()
        #expect(log.contains("reload rejected, previous configuration kept: \(file):5: key \"command\""), "\(log)")
    }
}
