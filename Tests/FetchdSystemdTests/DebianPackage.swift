import FetchdTestSupport
import Foundation
import Testing

/// The package `make deb` built (`make test` names its folder in `FETCHD_DEB_DIR`), and what the
/// package tests need around it: another revision of it, and the namespace's files.
enum DebianPackage {
    /// The built `fetchd_VERSION_ARCH.deb`, or nil when `FETCHD_DEB_DIR` names no folder with one.
    static var built: String? {
        guard let folder = ProcessInfo.processInfo.environment["FETCHD_DEB_DIR"], !folder.isEmpty,
              let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return nil }
        return names.filter { $0.hasPrefix("fetchd_") && $0.hasSuffix(".deb") }.sorted().last.map { folder + "/" + $0 }
    }

    /// Why the package tests are skipped.
    static let skipMessage = Comment(rawValue: "package tests skipped: FETCHD_DEB_DIR names no folder holding "
        + "fetchd_*.deb (make test builds the package with make deb and sets it)")

    /// systemd's "Started UNIT" journal message.
    static let unitStartedMessageID = "39f53479d3a045ac8e11786248231fbf"

    /// The Swift toolchain's root folder (`/opt/swift` when the runtime this test process runs
    /// on is `/opt/swift/usr/lib/swift/linux/libswiftCore.so`), hidden inside the namespace so
    /// that an installed program needing the toolchain's libraries fails there.
    static var toolchainFolders: [String] {
        let maps = ProcFile.read("/proc/self/maps") ?? ""
        guard let line = maps.split(separator: "\n").first(where: { $0.hasSuffix("/libswiftCore.so") }),
              let path = line.split(separator: " ").last, let range = path.range(of: "/usr/lib/swift/") else { return [] }
        let root = String(path[..<range.lowerBound])
        return root.isEmpty ? [] : [root]
    }

    /// Every path under `/usr`, `/etc`, `/var` and `/run` inside (the journal's files and the
    /// harness's own folder left out).
    static func files(_ namespace: SystemdNamespace) async throws -> Set<String> {
        let output = try await namespace.check(["find", "/usr", "/etc", "/var", "/run", "(", "-path", "/var/log/journal",
                                                "-o", "-path", "/run/fetchd-test", ")", "-prune", "-o", "-print"],
                                               timeoutSeconds: 60)
        return Set(output.stdout.split(separator: "\n").map(String.init))
    }

    /// Paths that installing and purging any package leaves changed: dpkg's and apt's records,
    /// caches and logs, the man page index, the backups systemd-sysusers keeps of the user files,
    /// systemd's runtime state and the folder of its timers' stamps (created here by the first
    /// persistent timer; a booted system has it). A path among them that names fetchd is still
    /// caught by the test.
    static func isBookkeeping(_ path: String) -> Bool {
        let folders = ["/var/lib/dpkg/", "/var/lib/apt/", "/var/cache/apt/", "/var/cache/debconf/", "/var/cache/man/",
                       "/var/log/", "/run/systemd/"]
        let files = ["/etc/passwd-", "/etc/group-", "/etc/shadow-", "/etc/gshadow-", "/etc/.pwd.lock", "/var/lib/systemd/timers"]
        return folders.contains { path.hasPrefix($0) } || files.contains(path)
    }

    /// A copy of `package` with Debian revision `revision` (same binaries, same scripts), in a
    /// temporary folder the caller removes.
    static func repack(_ package: String, revision: Int) async throws -> (path: String, folder: TemporaryDirectory) {
        let folder = try TemporaryDirectory("fetchd-deb")
        let tree = folder.file("tree")
        try await run("/usr/bin/dpkg-deb", ["-R", package, tree])
        let control = tree + "/DEBIAN/control"
        let fields = try String(contentsOfFile: control, encoding: .utf8).split(separator: "\n").map { line in
            guard line.hasPrefix("Version: ") else { return String(line) }
            let version = line.dropFirst("Version: ".count)
            return "Version: " + (version.split(separator: "-").dropLast().joined(separator: "-")) + "-\(revision)"
        }
        try (fields.joined(separator: "\n") + "\n").write(toFile: control, atomically: true, encoding: .utf8)
        let path = folder.file("fetchd-revision-\(revision).deb")
        try await run("/usr/bin/dpkg-deb", ["--root-owner-group", "-b", tree, path])
        return (path, folder)
    }

    private static func run(_ tool: String, _ arguments: [String]) async throws {
        let output = try await HostProcess.run(tool, arguments, timeoutSeconds: 120)
        if output.status != 0 { throw SystemdNamespace.Failure.commandFailed([tool] + arguments, output) }
    }
}
