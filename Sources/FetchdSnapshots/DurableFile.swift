#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CPosixShim
import FetchdCore
import Foundation
import Synchronization

/// Small POSIX helpers for crash-safe file updates: the temp-file, fsync, rename, fsync-dir
/// dance. Foundation's `Data.write(options: .atomic)` renames but never fsyncs, so after a
/// power loss the new name can point at an empty file.
public enum DurableFile {
    /// A system call failed; `operation` and `path` say which and where.
    public struct Failure: Error, CustomStringConvertible {
        /// What was being done, e.g. `rename`.
        public let operation: String
        /// The path involved.
        public let path: String
        /// The errno value.
        public let code: Int32
        /// `rename /var/cache/fetchd/x: No space left on device`.
        public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
    }

    /// A name part that no other temporary file has: this process's id, a random number drawn
    /// once per process (a crash's leftovers from an earlier process with the same id do not
    /// collide) and a counter. Drawing a random number for every name cost a `getrandom` call
    /// on every fetch.
    public static func uniqueSuffix() -> String {
        "\(processNonce)-\(namesGiven.add(1, ordering: .relaxed).newValue)"
    }

    private static let processNonce = "\(getpid())-\(UInt32.random(in: 0 ... .max))"
    private static let namesGiven = Atomic<Int>(0)

    /// Flushes a directory, making renames and creations inside it durable.
    public static func sync(directory path: String) throws(Failure) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(operation: "open", path: path, code: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure(operation: "fsync", path: path, code: errno) }
    }

    /// Atomically replaces `path`: a reader sees the old file or the new one, never a mix.
    public static func rename(_ from: String, to path: String) throws(Failure) {
        guard Glibc.rename(from, path) == 0 else { throw Failure(operation: "rename", path: path, code: errno) }
    }

    /// Flushes everything written to the file system holding `path` (`syncfs`): one call makes
    /// a whole batch of files and renames durable.
    public static func syncFileSystem(containing path: String) throws(Failure) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(operation: "open", path: path, code: errno) }
        defer { close(fd) }
        guard fetchd_syncfs(fd) == 0 else { throw Failure(operation: "syncfs", path: path, code: errno) }
    }

    /// Writes `data` to `path` atomically (temp file in the same directory, then a rename);
    /// `durably` fsyncs the file and the directory too, else a later `syncFileSystem` must.
    public static func write(_ data: Data, to path: String, mode: mode_t = 0o644, durably: Bool = true) throws(Failure) {
        let directory = PathName.directory(of: path)
        let temporary = "\(directory)/.\(PathName.lastComponent(of: path)).tmp-\(uniqueSuffix())"
        try writeNew(data, to: temporary, mode: mode, durably: durably)
        do { try rename(temporary, to: path) } catch { unlink(temporary); throw error }
        if durably { try sync(directory: directory.isEmpty ? "." : directory) }
    }

    /// Creates `path`, which must not exist, and writes `data` to it, in place: only for a file
    /// no reader can see yet (inside a staging folder that is renamed into view once complete).
    /// A failure removes the file. `durably` fsyncs it.
    public static func writeNew(_ data: Data, to path: String, mode: mode_t = 0o644, durably: Bool = false) throws(Failure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(operation: "create", path: path, code: errno) }
        var failure: Failure?
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = Failure(operation: "write", path: path, code: errno); return
                }
                offset += written
            }
        }
        if failure == nil && durably && fsync(fd) != 0 { failure = Failure(operation: "fsync", path: path, code: errno) }
        close(fd)
        if let failure { unlink(path); throw failure }
    }

    /// Atomically points the symlink at `path` to `target` (create a temp link, rename over);
    /// `durably` fsyncs the directory too, else a later `syncFileSystem` must.
    public static func replaceSymlink(at path: String, target: String, durably: Bool = true) throws(Failure) {
        let temporary = "\(path).tmp-\(uniqueSuffix())"
        guard symlink(target, temporary) == 0 else { throw Failure(operation: "symlink", path: temporary, code: errno) }
        do { try rename(temporary, to: path) } catch { unlink(temporary); throw error }
        guard durably else { return }
        let directory = PathName.directory(of: path)
        try sync(directory: directory.isEmpty ? "." : directory)
    }

    /// Creates a directory with `mode` (and missing parents with 0755); an existing one is fine.
    public static func makeDirectory(_ path: String, mode: mode_t = 0o755) throws(Failure) {
        // mkdir first: one call whether the folder is there or not (this runs several times per
        // fetch, and on a fresh cache every folder is new); parents only when it says ENOENT.
        if mkdir(path, mode) == 0 || errno == EEXIST { return }
        guard errno == ENOENT else { throw Failure(operation: "mkdir", path: path, code: errno) }
        let parent = PathName.directory(of: path)
        if !parent.isEmpty && parent != "/" && parent != path { try makeDirectory(parent) }
        guard mkdir(path, mode) == 0 || errno == EEXIST else { throw Failure(operation: "mkdir", path: path, code: errno) }
    }
}
