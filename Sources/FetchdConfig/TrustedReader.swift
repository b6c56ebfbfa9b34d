import FetchdCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads configuration through descriptors and holds each to `ConfigTrust`: a file is opened
/// without following a link (`O_NOFOLLOW`), checked with `fstat` on that descriptor and read
/// from it, and the folders above are checked by climbing `..` from the folder it was opened
/// in, so the file checked is the file read whatever is renamed meanwhile. One reader serves
/// one load: each folder, and each group's membership, is looked at once.
final class TrustedReader {
    /// What reading a file gave.
    enum Read {
        /// The file's text.
        case text(String)
        /// The file (or its folder) does not exist.
        case missing
        /// fetchd may not trust it: why (a phrase to follow the file's name).
        case untrusted(String)
        /// It cannot be read: why.
        case unreadable(String)
        /// Its bytes are not a text fetchd parses (too large, not UTF-8, a NUL byte, a line
        /// too long or too dotted: `ConfigText`): where and why.
        case malformed(ConfigText.Problem)
    }

    /// A folder opened for reading, closed when dropped.
    final class Folder {
        /// The descriptor handler files are opened relative to.
        let fd: Int32
        /// The folder's path as configured, for messages.
        let path: String

        /// Takes over `fd`, which it closes.
        init(fd: Int32, path: String) {
            self.fd = fd
            self.path = path
        }

        deinit { close(fd) }
    }

    /// A file or folder, told apart from every other by device and inode.
    private struct FileKey: Hashable {
        let device: UInt64
        let inode: UInt64

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    /// The user fetchd runs as.
    let euid: uid_t
    /// The uid owners outside fetchd's user namespace show as, if root is outside it
    /// (`ConfigTrust.unmappedOwner`).
    let unmapped: uid_t?
    /// Each folder seen, with why it or a folder above it may not be trusted (nil: trusted).
    private var folders: [FileKey: String?] = [:]
    /// Whether each group (gid, owner) has the owner as its only member.
    private var privateGroups: [UInt64: Bool] = [:]
    /// Each program and CA file looked at (by the name configuration gives, with the `PATH` a
    /// bare program name is looked up in), with why it may not be trusted: a thousand handlers
    /// running `/bin/sh` check it once.
    var namedFiles: [String: String?] = [:]
    /// Called with a file's path once it passed the check, before it is read: where a test
    /// swaps the file, to see that the file read is still the file checked.
    var afterCheck: ((String) -> Void)?

    /// A reader for a load by fetchd running as `euid`, in a user namespace where unmapped
    /// owners show as `unmapped`.
    init(euid: uid_t = geteuid(), unmapped: uid_t? = ConfigTrust.unmappedOwner) {
        self.euid = euid
        self.unmapped = unmapped
    }

    /// The text of `path`, checked with every folder above it. The folders named on the way to
    /// it may be links (the administrator chose them); the file itself may not.
    func read(_ path: String) -> Read {
        let directory = PathName.directory(of: path)
        let folder = open(directory.isEmpty ? "." : directory, TrustedReader.openPath | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { return errno == ENOENT ? .missing : .unreadable(Self.lastError()) }
        defer { close(folder) }
        if let problem = folderProblem(folder) { return .untrusted("in \(problem)") }
        return read(named: PathName.lastComponent(of: path), in: folder, path: path)
    }

    /// The text of the entry `name` of the open folder `folder` (at `path`, for messages),
    /// checked through the descriptor it is read from (`folder` and those above are checked
    /// already).
    func read(named name: String, in folder: Int32, path: String) -> Read {
        let fd = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ENOENT: return .missing
            case ELOOP: return .untrusted(Self.linkRefusal)
            default: return .unreadable(Self.lastError())
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .unreadable(Self.lastError()) }
        guard info.st_mode & S_IFMT == S_IFREG else { return .unreadable("not a regular file") }
        if let problem = problem(info, path, .named) {
            return .untrusted(problem)
        }
        afterCheck?(path)
        return Self.text(of: fd)
    }

    /// The text read from `fd`, held to `ConfigText`'s bounds; no more than one byte past
    /// `Defaults.configMaxFileBytes` is read (the size `fstat` gave may have changed since).
    private static func text(of fd: Int32) -> Read {
        let limit = Defaults.configMaxFileBytes
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { return .unreadable(lastError()) }
            if got == 0 { break }
            count += got
        }
        guard count <= limit else {
            return .malformed(ConfigText.Problem(line: nil, message: "the file is larger than \(limit) bytes, the most a "
                + "configuration file may have; split its handlers into files of their own in handlers.d"))
        }
        bytes.removeSubrange(count...)
        if let problem = bytes.withUnsafeBytes(ConfigText.problem(in:)) { return .malformed(problem) }
        return .text(String(decoding: bytes, as: UTF8.self))
    }

    /// The handler folder `path`, opened without following a link and checked with every
    /// folder above it; nil with `.missing` when it does not exist.
    func openFolder(_ path: String) -> (folder: Folder?, problem: Read?) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let failure = errno
            var info = stat()
            if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK { return (nil, .untrusted(Self.linkRefusal)) }
            return (nil, failure == ENOENT ? .missing : .unreadable(String(cString: strerror(failure))))
        }
        let folder = Folder(fd: fd, path: path)
        var info = stat()
        guard fstat(fd, &info) == 0 else { return (nil, .unreadable(Self.lastError())) }
        if let problem = problem(info, path, .named) {
            return (nil, .untrusted(problem))
        }
        let above = openat(fd, "..", TrustedReader.openPath | O_DIRECTORY | O_CLOEXEC)
        guard above >= 0 else { return (nil, .untrusted("in a folder fetchd cannot examine (\(Self.lastError()))")) }
        defer { close(above) }
        if let problem = folderProblem(above) { return (nil, .untrusted("in \(problem)")) }
        return (folder, nil)
    }

    /// The names in `folder` (not `.` and `..`), in no particular order.
    func names(in folder: Folder) -> [String] {
        let copy = dup(folder.fd)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Why the file `path` names (a program or a CA file) may not be trusted, following links
    /// as `execve` and libcurl do: each link's folder (with those above) and the file at the
    /// end (with those above) must pass `ConfigTrust`. Nil when they do, or when something on
    /// the way does not exist: a missing program fails when it is run, as it always has.
    func namedFileProblem(_ path: String) -> String? {
        var current = PathName.absolute(path)
        for _ in 0..<40 {
            let folder = open(PathName.directory(of: current), TrustedReader.openPath | O_DIRECTORY | O_CLOEXEC)
            guard folder >= 0 else { return nil }
            defer { close(folder) }
            if let problem = folderProblem(folder) { return "\(current) is in \(problem)" }
            let name = PathName.lastComponent(of: current)
            let fd = openat(folder, name, TrustedReader.openPath | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0 else { return nil }
            guard info.st_mode & S_IFMT == S_IFLNK else {
                return problem(info, current, .named).map { "\(current) is \($0)" }
            }
            var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let length = readlinkat(folder, name, &target, target.count - 1)
            guard length > 0 else { return nil }
            let text = String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = text.hasPrefix("/") ? text : PathName.directory(of: current) + "/" + text
        }
        return "\(path) leads through more than 40 symbolic links; name the file itself"
    }

    /// Why the folder open at `start`, or one above it up to `/`, may not be trusted: "the
    /// folder F, owned by ...", nil when all may. Each folder is examined once per reader.
    func folderProblem(_ start: Int32) -> String? {
        var chain: [(key: FileKey, problem: String?)] = []
        var inherited: String?
        var fd = dup(start)
        guard fd >= 0 else { return "a folder fetchd cannot examine (\(Self.lastError()))" }
        while fd >= 0 {
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                inherited = "a folder fetchd cannot examine (\(Self.lastError()))"
                break
            }
            let key = FileKey(info)
            if let known = folders[key] {
                inherited = known
                break
            }
            let own = problem(info, name(of: fd), .parent)
            chain.append((key, own.map { "the folder \(name(of: fd)), \($0)" }))
            let above = openat(fd, "..", TrustedReader.openPath | O_DIRECTORY | O_CLOEXEC)
            var aboveInfo = stat()
            guard above >= 0, fstat(above, &aboveInfo) == 0 else {
                inherited = "a folder above \(name(of: fd)) that fetchd cannot examine (\(Self.lastError()))"
                if above >= 0 { close(above) }
                break
            }
            close(fd)
            fd = FileKey(aboveInfo) == key ? -1 : above  // `/` is its own parent
            if fd < 0 { close(above) }
        }
        if fd >= 0 { close(fd) }
        var verdict = inherited
        for link in chain.reversed() {
            verdict = link.problem ?? verdict
            folders[link.key] = .some(verdict)
        }
        return verdict
    }

    /// `ConfigTrust.problem` for this reader's fetchd.
    private func problem(_ info: stat, _ path: @autoclosure () -> String, _ role: ConfigTrust.Role) -> String? {
        ConfigTrust.problem(info, path: path(), role: role, euid: euid, unmapped: unmapped, groupIsPrivate: groupIsPrivate)
    }

    /// Whether group `gid` has `owner` as its only member, looked up once per reader.
    private func groupIsPrivate(_ gid: gid_t, _ owner: uid_t) -> Bool {
        let key = UInt64(gid) << 32 | UInt64(owner)
        if let known = privateGroups[key] { return known }
        let verdict = ConfigTrust.groupIsPrivate(gid, owner: owner)
        privateGroups[key] = verdict
        return verdict
    }

    /// The path the kernel has for `fd`, for messages.
    private func name(of fd: Int32) -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "a folder above it"
    }

    /// `O_PATH` (Linux's value on every architecture Swift builds for), which Glibc's Swift
    /// module leaves out: a descriptor that only names a file, to `fstat` it or climb from it,
    /// which needs no read permission (a program may be execute-only, a folder search-only).
    static let openPath: Int32 = 0o10_000_000

    /// Why a link is refused, after its name.
    private static let linkRefusal = "a symbolic link: fetchd reads configuration only from the file itself, "
        + "so that the file it checks is the file it reads; put the file there in place of the link"

    private static func lastError() -> String { String(cString: strerror(errno)) }
}
