import FetchdState
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `user = "NAME"` on exec handlers, through the real daemon (`fetchd --once`): the program runs
/// as that user with that user's groups, what it wrote is published as fetchd's, and it cannot make
/// fetchd publish a file it could not read itself. Debian's `nobody` (65534, group `nogroup`)
/// and `daemon` (1) are the users.
@Suite(.serialized, .enabled(if: getuid() == 0, "needs root: fetchd switches users only as root"))
struct ExecUserTests {
    /// A daemon set up for `handlers`, its temporary folder passable by other users (mkdtemp
    /// makes it 0700; a real cache lives in /var/cache, which everyone may enter).
    private func daemon(_ handlers: String) throws -> DaemonProcess {
        let daemon = try DaemonProcess(handlers: handlers)
        chmod(daemon.directory.path, 0o711)
        return daemon
    }

    private func once(_ daemon: DaemonProcess, as prefix: [String] = []) async throws -> (status: Int32, output: String) {
        let command = prefix + [TestBinaries.path(of: "fetchd"), "--config", daemon.configPath, "--once"]
        return try await ChildProcess.runWithoutBlocking(command[0], Array(command.dropFirst()))
    }

    private func lastResult(_ daemon: DaemonProcess, _ handler: String) throws -> (String, String?)? {
        let state = try StateStore(path: daemon.directory.file("state/state.sqlite"))
        return try state.history(of: handler, limit: 1).first.map { ($0.result.name, $0.result.reason) }
    }

    @Test func theProgramRunsAsTheUserAndItsSnapshotIsFetchds() async throws {
        let daemon = try daemon("""
            [[handler]]
            name = "who"
            kind = "exec"
            user = "nobody"
            command = ["/bin/sh", "-c", "{ id -u; id -g; id -G; echo \\"$HOME $USER $LOGNAME\\"; } > \\"$FETCHD_OUTPUT\\""]
            """)
        defer { daemon.directory.remove() }
        let result = try await once(daemon)
        #expect(result.status == 0, "\(result.output)")
        let content = daemon.cachePath + "/who/latest/content"
        let lines = try String(contentsOfFile: content, encoding: .utf8).split(separator: "\n")
        // Only nobody's own group: not root's (fetchd's) supplementary groups.
        #expect(lines == ["65534", "65534", "65534", "/nonexistent nobody nobody"], "\(lines)")
        var info = stat()
        #expect(lstat(content, &info) == 0 && info.st_uid == getuid(), "the published file must be fetchd's, not nobody's")
        #expect(lstat(daemon.cachePath + "/who/.staging-user", &info) == 0 && info.st_uid == 65534 && info.st_mode & 0o777 == 0o700)
    }

    /// The program plants a symlink, then a hard link, to a file only root may read: neither is
    /// published, and the file keeps its mode and its single name.
    @Test func aLinkToAFileTheUserCannotReadIsNotPublished() async throws {
        let daemon = try daemon("""
            [[handler]]
            name = "soft"
            kind = "exec"
            user = "nobody"
            command = ["/bin/sh", "-c", "ln -s \\"$SECRET\\" \\"$FETCHD_OUTPUT\\""]
            environment = { SECRET = "%SECRET%" }

            [[handler]]
            name = "hard"
            kind = "exec"
            user = "nobody"
            command = ["/bin/sh", "-c", "ln \\"$SECRET\\" \\"$FETCHD_OUTPUT\\""]
            environment = { SECRET = "%SECRET%" }
            """.replacingOccurrences(of: "%SECRET%", with: "/tmp/fetchd-user-secret-\(getpid())"))
        defer { daemon.directory.remove() }
        // Outside the 0711 folder, in /tmp, so nobody can name it (and could hard-link it where
        // protected_hardlinks is off).
        let secret = "/tmp/fetchd-user-secret-\(getpid())"
        try Data("root only\n".utf8).write(to: URL(fileURLWithPath: secret))
        defer { unlink(secret) }
        chmod(secret, 0o600)
        _ = try await once(daemon)
        for name in ["soft", "hard"] {
            #expect(!FileManager.default.fileExists(atPath: daemon.cachePath + "/\(name)/latest"), "\(name) published")
            #expect(try lastResult(daemon, name)?.0 == "failed")
        }
        var info = stat()
        #expect(stat(secret, &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_nlink == 1)
    }

    /// The program hard-links a third user's file (daemon's, 0666: linkable by nobody even under
    /// `protected_hardlinks`) at FETCHD_OUTPUT: the fetch fails saying why, and the file keeps its
    /// owner, group, mode, content and single name (fetchd never re-owns or moves a user's file).
    @Test func aHardLinkToAThirdUsersFileIsLeftUntouched() async throws {
        let third = "/tmp/fetchd-third-user-\(getpid())"
        let daemon = try daemon("""
            [[handler]]
            name = "linked"
            kind = "exec"
            user = "nobody"
            command = ["/bin/sh", "-c", "ln \\"$THIRD\\" \\"$FETCHD_OUTPUT\\""]
            environment = { THIRD = "\(third)" }
            """)
        defer { daemon.directory.remove() }
        try Data("daemon's own\n".utf8).write(to: URL(fileURLWithPath: third))
        defer { unlink(third) }
        #expect(chown(third, 1, 1) == 0 && chmod(third, 0o666) == 0)
        _ = try await once(daemon)
        let (outcome, reason) = try #require(try lastResult(daemon, "linked"))
        #expect(outcome == "failed")
        #expect(reason?.contains("FETCHD_OUTPUT has 2 names (a hard link?)") == true, "\(reason ?? "")")
        var info = stat()
        #expect(stat(third, &info) == 0)
        #expect(info.st_uid == 1 && info.st_gid == 1 && info.st_mode & 0o7777 == 0o666 && info.st_nlink == 1,
                "uid \(info.st_uid) gid \(info.st_gid) mode \(String(info.st_mode & 0o7777, radix: 8)) links \(info.st_nlink)")
        #expect(try String(contentsOfFile: third, encoding: .utf8) == "daemon's own\n")
        #expect(!FileManager.default.fileExists(atPath: daemon.cachePath + "/linked/latest"))
    }

    /// A process the program leaves behind keeps FETCHD_OUTPUT open and writes to it after the
    /// result: what fetchd published is a copy, so it does not change.
    @Test func aDescriptorKeptOpenCannotChangeThePublishedSnapshot() async throws {
        let daemon = try daemon("""
            [[handler]]
            name = "lingering"
            kind = "exec"
            user = "nobody"
            command = ["/bin/sh", "-c", "printf good > \\"$FETCHD_OUTPUT\\"; setsid sh -c 'sleep 1; echo evil >&3' 3>>\\"$FETCHD_OUTPUT\\" >/dev/null 2>&1 &"]
            """)
        defer { daemon.directory.remove() }
        let result = try await once(daemon)
        #expect(result.status == 0, "\(result.output)")
        let content = daemon.cachePath + "/lingering/latest/content"
        #expect(try String(contentsOfFile: content, encoding: .utf8) == "good")
        try await Task.sleep(for: .seconds(2))
        #expect(try String(contentsOfFile: content, encoding: .utf8) == "good", "the lingering process changed the published file")
    }

    /// A sparse file of a terabyte costs its user nothing; fetchd, as root, does not write it out:
    /// over `max_bytes` it is refused before anything is copied.
    @Test func anOutputOverMaxBytesIsRefusedBeforeTheCopy() async throws {
        let daemon = try daemon("""
            [[handler]]
            name = "sparse"
            kind = "exec"
            user = "nobody"
            max_bytes = 4096
            command = ["/bin/sh", "-c", "truncate -s 1T \\"$FETCHD_OUTPUT\\""]
            """)
        defer { daemon.directory.remove() }
        _ = try await once(daemon)
        let (outcome, reason) = try #require(try lastResult(daemon, "sparse"))
        #expect(outcome == "failed")
        #expect(reason == "FETCHD_OUTPUT is 1099511627776 bytes, over max_bytes (4096)", "\(reason ?? "")")
    }

    /// fetchd not running as root cannot hand a folder to another user: the fetch fails saying so.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs setpriv (util-linux)"))
    func withoutRootTheFetchFailsSayingWhy() async throws {
        let daemon = try daemon("""
            [[handler]]
            name = "as-daemon"
            kind = "exec"
            user = "daemon"
            command = ["/bin/sh", "-c", "id -u > \\"$FETCHD_OUTPUT\\""]
            """)
        defer { daemon.directory.remove() }
        // fetchd runs as nobody here, owning its folders.
        #expect(try await ChildProcess.runWithoutBlocking("/bin/chown", ["-R", "65534:65534", daemon.directory.path]).status == 0)
        let result = try await once(daemon, as: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        #expect(result.status == 1, "--once exits 1 when a fetch failed: \(result.output)")
        let (outcome, reason) = try #require(try lastResult(daemon, "as-daemon"))
        #expect(outcome == "failed")
        #expect(reason?.contains("cannot run as user daemon: fetchd (uid 65534) may not give it a folder") == true, "\(reason ?? "")")
        #expect(reason?.contains("needs fetchd to run as root") == true)
    }
}
