import FetchdCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A control group (cgroup v2) of one exec handler's program, under fetchd's own, so that the
/// whole program ends with it: a child that leaves the program's session (`setsid`, a
/// double fork) leaves its process group but never its cgroup, and `cgroup.kill` ends every
/// process in it at once, in sub-groups it made too. What it does not stop: a program running as
/// fetchd's own user may write its pid into fetchd's group (it owns it, as fetchd does) and so
/// step out on purpose; one running as another user (`user =`) cannot.
///
/// Used where fetchd's group is its own to divide: started by systemd (`INVOCATION_ID`) in a
/// group it may write, which `Delegate=yes` in the shipped units gives it. Elsewhere (a shell, a
/// unit without delegation) the group is someone else's and fetchd keeps to process groups
/// (`ProgramCgroup.placement` says which and why). Groups are named `program-UNIQUE`; those a
/// crash left behind are ended and removed at start (`removeLeftovers`).
public final class ProgramCgroup: Sendable {
    /// Where programs run: the folder of fetchd's own cgroup, or why they cannot have groups.
    public enum Placement: Sendable, Equatable, CustomStringConvertible {
        /// Each program in a sub-group of this folder.
        case cgroups(String)
        /// Process groups only; why, in words.
        case processGroups(String)

        /// One line for the log.
        public var description: String {
            switch self {
            case .cgroups(let base): "each program runs in a control group of its own under \(base)"
            case .processGroups(let why):
                "programs run in process groups only (\(why)): one that leaves its session outlives its deadline"
            }
        }
    }

    /// The folder of this group.
    let path: String

    private init(path: String) { self.path = path }

    /// Decided once, from `/proc/self/cgroup` and `/proc/self/mountinfo`.
    public static let placement: Placement = findPlacement()

    /// The prefix of the groups' names.
    static let namePrefix = "program-"

    /// A new group for one program; nil when programs run in process groups only, or when this
    /// one could not be made (the program then runs in its process group alone).
    static func make() -> ProgramCgroup? {
        guard case .cgroups(let base) = placement else { return nil }
        let path = "\(base)/\(namePrefix)\(UUID().uuidString.lowercased())"
        guard mkdir(path, 0o755) == 0 else { return nil }
        return ProgramCgroup(path: path)
    }

    /// The file a process writes its pid to, to join the group.
    var procsPath: String { "\(path)/cgroup.procs" }

    /// Kills every process in the group (`cgroup.kill`), waits until the kernel says it is empty
    /// and removes it. At most `timeout`: a process stuck in the kernel (uninterruptible I/O) may
    /// take longer to die; the group is then left to `removeLeftovers` at the next start.
    func end(timeout: Duration = .seconds(5)) async {
        Self.kill(path)
        let deadline = ContinuousClock.now + timeout
        while Self.isPopulated(path), ContinuousClock.now < deadline {
            await ProcessGroupReaper.sleepIgnoringCancellation(.milliseconds(5))
        }
        Self.remove(path)
    }

    /// Ends and removes the groups a previous fetchd left (it was killed mid-fetch).
    public static func removeLeftovers() {
        guard case .cgroups(let base) = placement,
              let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { return }
        for name in names where name.hasPrefix(namePrefix) {
            let group = "\(base)/\(name)"
            kill(group)
            var tries = 0
            while isPopulated(group), tries < 100 {
                usleep(10_000)
                tries += 1
            }
            remove(group)
        }
    }

    /// Removes an emptied group and the sub-groups a program made in it, deepest first (a
    /// cgroup with children cannot be removed). A group still holding a process stays, for
    /// `removeLeftovers` at the next start.
    private static func remove(_ path: String) {
        // The usual case, a group without sub-groups, needs no listing of its interface files.
        if rmdir(path) == 0 { return }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        for entry in entries {
            var info = stat()
            // Only directories are sub-groups; the rest are the kernel's interface files.
            if lstat("\(path)/\(entry)", &info) == 0, info.st_mode & S_IFMT == S_IFDIR { remove("\(path)/\(entry)") }
        }
        rmdir(path)
    }

    private static func kill(_ path: String) {
        let fd = open("\(path)/cgroup.kill", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = write(fd, "1", 1)
        close(fd)
    }

    /// Whether `cgroup.events` says a process is still in the group (false once it is gone).
    private static func isPopulated(_ path: String) -> Bool {
        guard let events = try? String(contentsOfFile: "\(path)/cgroup.events", encoding: .utf8) else { return false }
        return events.split(separator: "\n").contains("populated 1")
    }

    /// Where fetchd's own group is, and whether it may make sub-groups there.
    private static func findPlacement() -> Placement {
        guard ProcessInfo.processInfo.environment["INVOCATION_ID"] != nil else {
            return .processGroups("not started by systemd, so no control group is fetchd's own")
        }
        guard let own = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8))?
            .split(separator: "\n").first(where: { $0.hasPrefix("0::") }).map({ String($0.dropFirst(3)) }) else {
            return .processGroups("no cgroup v2 hierarchy (/proc/self/cgroup has no 0:: line)")
        }
        guard own != "/" else { return .processGroups("fetchd runs in the root cgroup, which is not its own to divide") }
        guard let mount = cgroup2Mount() else { return .processGroups("the cgroup v2 hierarchy is not mounted") }
        let base = mount + own
        guard access("\(base)/cgroup.kill", F_OK) == 0 else {
            return .processGroups("\(base) has no cgroup.kill (Linux 5.14 or later has it)")
        }
        guard access(base, W_OK) == 0, access("\(base)/cgroup.procs", W_OK) == 0 else {
            return .processGroups("fetchd may not make groups in \(base) (under systemd, the unit needs Delegate=yes)")
        }
        return .cgroups(base)
    }

    /// Where the cgroup2 file system is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on
    /// a hybrid system), from `/proc/self/mountinfo`.
    private static func cgroup2Mount() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS"
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2, halves[1].hasPrefix("cgroup2 ") else { continue }
            let fields = halves[0].split(separator: " ")
            if fields.count >= 5 { return String(fields[4]) }
        }
        return nil
    }
}
