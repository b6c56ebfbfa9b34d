@testable import FetchdConfig
import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The programs and CA files configuration names are held to the rule its files are: owned by
/// root or fetchd's user, in folders only they may write. Another user (nobody, 65534) owning
/// one stops the start, with the file, line and key to blame.
@Suite("Named file trust", .enabled(if: geteuid() == 0, "needs root to give files to another user"))
struct NamedFileTrustTests {
    /// A fresh folder with a main file, a program `bin/prog` and a CA file `certs/ca.pem`.
    static func setUp() throws -> (folder: TemporaryDirectory, main: String, program: String, caFile: String) {
        let folder = try TemporaryDirectory("fetchd-named-trust")
        let main = try folder.write("heartbeat = \"15m\"\n", to: "fetchd.toml")
        let program = try folder.write("#!/bin/sh\nexit 0\n", to: "bin/prog")
        let caFile = try folder.write("-----BEGIN CERTIFICATE-----\n", to: "certs/ca.pem")
        chmod(program, 0o755)
        chmod(caFile, 0o644)
        for name in ["bin", "certs"] { chmod(folder.file(name), 0o755) }
        return (folder, main, program, caFile)
    }

    /// Writes `handlers.d/a.toml`; returns its path.
    static func handlerFile(_ text: String, in folder: TemporaryDirectory) throws -> String {
        let file = try folder.write(text, to: "handlers.d/a.toml")
        chmod(file, 0o644)
        chmod(folder.file("handlers.d"), 0o755)
        return file
    }

    /// The one problem loading `main` stopped on, checking it is at `key` on `line` of `file`.
    static func problem(_ main: String, file: String, line: Int, key: String) -> ConfigDiagnostic? {
        let problems = ConfigTrustTests.rejection(main)
        #expect(problems.count == 1, "\(problems)")
        let problem = problems.first
        #expect(problem?.file == file && problem?.line == line && problem?.key == key, "\(problems)")
        #expect(problem?.effect == .stopsStart && problem?.handler == "a")
        #expect(ConfigLoader.examine(path: main).exitStatus == 78)
        return problem
    }

    static func exec(_ command: String, environment: String = "") -> String {
        "[[handler]]\nname = \"a\"\nkind = \"exec\"\n\(environment)command = [\"\(command)\", \"--flag\"]\n"
    }

    @Test func anExecProgramAnotherUserOwnsIsRefused() throws {
        let (folder, main, program, _) = try Self.setUp()
        defer { folder.remove() }
        let file = try Self.handlerFile(Self.exec(program), in: folder)
        #expect(ConfigTrustTests.rejection(main).isEmpty)
        chown(program, 65534, 65534)
        let problem = Self.problem(main, file: file, line: 4, key: "command")
        #expect(problem?.message.contains("the program may not be trusted: \(program) is owned by uid 65534") == true,
                "\(String(describing: problem))")
        // Named through a link, the file at its end is checked.
        let link = folder.file("link")
        symlink(program, link)
        _ = try Self.handlerFile(Self.exec(link), in: folder)
        #expect(Self.problem(main, file: file, line: 4, key: "command")?.message.contains("\(program) is owned by uid 65534") == true)
    }

    @Test func anExecProgramInAFolderAnotherUserMayWriteIsRefused() throws {
        let (folder, main, program, _) = try Self.setUp()
        defer { folder.remove() }
        let file = try Self.handlerFile(Self.exec(program), in: folder)
        chown(folder.file("bin"), 65534, 65534)
        let problem = Self.problem(main, file: file, line: 4, key: "command")
        #expect(problem?.message.contains("\(program) is in the folder \(ConfigTrustPathTests.real(folder.file("bin"))), owned by uid 65534") == true,
                "\(String(describing: problem))")
        // A bare name is looked up in the handler's PATH: a folder searched before the one
        // holding it counts too, as whoever may write it could put a program of that name first.
        chown(folder.file("bin"), 0, 0)
        let open = folder.file("open")
        mkdir(open, 0o777)
        chmod(open, 0o777)
        let path = "environment = { PATH = \"\(open):\(folder.file("bin"))\" }\n"
        _ = try Self.handlerFile(Self.exec("prog", environment: path), in: folder)
        let lookedUp = Self.problem(main, file: file, line: 5, key: "command")
        #expect(lookedUp?.message.contains("prog is looked up in PATH") == true
                    && lookedUp?.message.contains("writable by every user (mode 777)") == true, "\(String(describing: lookedUp))")
        // With that folder closed the program found is fine, and a missing one is left to fail when run.
        chmod(open, 0o755)
        #expect(ConfigTrustTests.rejection(main).isEmpty)
        _ = try Self.handlerFile(Self.exec(folder.file("missing/prog")), in: folder)
        #expect(ConfigTrustTests.rejection(main).isEmpty)
    }

    /// A `PATH` folder that does not exist is judged by the folder that would hold it: whoever
    /// may write that one can create it, with a program of the name in it, after the check.
    @Test func aMissingPathFolderIsJudgedByTheFolderAboveIt() throws {
        let (folder, main, _, _) = try Self.setUp()
        defer { folder.remove() }
        let open = folder.file("open")
        mkdir(open, 0o777)
        chmod(open, 0o777)
        let path = "environment = { PATH = \"\(open)/later/bin:\(folder.file("bin"))\" }\n"
        let file = try Self.handlerFile(Self.exec("prog", environment: path), in: folder)
        let problem = Self.problem(main, file: file, line: 5, key: "command")
        #expect(problem?.message.contains("through \(open)/later/bin, which does not exist, below the folder") == true
                    && problem?.message.contains("writable by every user (mode 777)") == true, "\(String(describing: problem))")
        // Below a folder only root may write, a missing one is no risk.
        chmod(open, 0o755)
        #expect(ConfigTrustTests.rejection(main).isEmpty)
    }

    @Test func anOnFailureProgramAnotherUserOwnsIsRefusedInAHandlerAndInTheMainFile() throws {
        let (folder, main, program, _) = try Self.setUp()
        defer { folder.remove() }
        let file = try Self.handlerFile("""
            [[handler]]
            name = "a"
            kind = "http"
            url = "https://example.com/file"
            on_failure = ["\(program)"]

            """, in: folder)
        #expect(ConfigTrustTests.rejection(main).isEmpty)
        chown(program, 65534, 65534)
        let problem = Self.problem(main, file: file, line: 5, key: "on_failure")
        #expect(problem?.message.contains("owned by uid 65534") == true, "\(String(describing: problem))")
        // The main file's, for every handler without its own.
        _ = try Self.handlerFile("[[handler]]\nname = \"a\"\nkind = \"http\"\nurl = \"https://example.com/\"\n", in: folder)
        try folder.write("heartbeat = \"15m\"\non_failure = [\"\(program)\", \"--alert\"]\n", to: "fetchd.toml")
        let problems = ConfigTrustTests.rejection(main)
        #expect(problems.count == 1 && problems.first?.line == 2 && problems.first?.key == "on_failure"
                    && problems.first?.file == main && problems.first?.message.contains("owned by uid 65534") == true, "\(problems)")
    }

    /// The main file's `on_failure` runs with the handler's `environment`: a bare name is looked
    /// up in that PATH, here a folder another user owns that holds a program of that name.
    @Test func theMainFilesOnFailureIsCheckedInTheHandlersPATH() throws {
        let (folder, main, _, _) = try Self.setUp()
        defer { folder.remove() }
        try folder.write("heartbeat = \"15m\"\non_failure = [\"notify-admin\", \"--alert\"]\n", to: "fetchd.toml")
        let planted = try folder.write("#!/bin/sh\nexit 0\n", to: "userbin/notify-admin")
        chmod(planted, 0o755)
        chmod(folder.file("userbin"), 0o755)
        chown(folder.file("userbin"), 65534, 65534)
        chown(planted, 65534, 65534)
        let handler = "[[handler]]\nname = \"a\"\nkind = \"exec\"\ncommand = [\"/bin/true\"]\n"
        let file = try Self.handlerFile(handler + "environment = { PATH = \"\(folder.file("userbin")):/usr/bin:/bin\" }\n", in: folder)
        let problem = Self.problem(main, file: file, line: 5, key: "environment")
        #expect(problem?.message.hasPrefix("the main file's on_failure program, run with this handler's PATH, may not be trusted: ") == true
                    && problem?.message.contains("owned by uid 65534") == true, "\(String(describing: problem))")
        // Without the handler's PATH, the default one finds no such program there.
        _ = try Self.handlerFile(handler, in: folder)
        #expect(ConfigTrustTests.rejection(main).isEmpty)
    }

    @Test func anOnCompleteProgramAnotherUserOwnsIsRefused() throws {
        let (folder, main, program, _) = try Self.setUp()
        defer { folder.remove() }
        let file = try Self.handlerFile("""
            [[handler]]
            name = "a"
            kind = "transfer"
            url = "https://example.com/file"
            on_complete = ["\(program)"]

            """, in: folder)
        #expect(ConfigTrustTests.rejection(main).isEmpty)
        chown(program, 65534, 65534)
        let problem = Self.problem(main, file: file, line: 5, key: "on_complete")
        #expect(problem?.message.contains("owned by uid 65534") == true, "\(String(describing: problem))")
    }

    @Test func aCAFileAnotherUserOwnsOrMayReplaceIsRefused() throws {
        let (folder, main, _, caFile) = try Self.setUp()
        defer { folder.remove() }
        let file = try Self.handlerFile("""
            [[handler]]
            name = "a"
            kind = "http"
            url = "https://example.com/"
            ca_file = "\(caFile)"

            """, in: folder)
        #expect(ConfigTrustTests.rejection(main).isEmpty)
        chown(caFile, 65534, 65534)
        var problem = Self.problem(main, file: file, line: 5, key: "ca_file")
        #expect(problem?.message.contains("the CA file may not be trusted: \(caFile) is owned by uid 65534") == true,
                "\(String(describing: problem))")
        chown(caFile, 0, 0)
        chmod(folder.file("certs"), 0o777)
        problem = Self.problem(main, file: file, line: 5, key: "ca_file")
        #expect(problem?.message.contains("writable by every user (mode 777)") == true, "\(String(describing: problem))")
    }
}
