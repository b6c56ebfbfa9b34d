import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An inotify instance, for the watchers that follow files (`PowerWatcher`, `ReadWatcher`):
/// opened non-blocking and close-on-exec, read on the owner's dispatch queue whenever events are
/// pending, and closed with its owner.
final class Inotify: Sendable {
    /// One event read from the instance.
    struct Event {
        /// The watch it came from (what `add` returned).
        let watch: Int32
        /// What happened (`IN_*` bits).
        let mask: UInt32
        /// The entry it concerns inside a watched folder; empty for the watched path itself.
        let name: String
    }

    /// Why there is no instance (`inotify_init1` failed, e.g. the per-user limit of instances is
    /// reached: raise `fs.inotify.max_user_instances`), or nil when there is one.
    let problem: String?
    private let fd: Int32

    /// Opens an instance; when it cannot, `problem` says why and nothing is ever watched.
    init() {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        problem = fd >= 0 ? nil : "inotify_init1: \(String(cString: strerror(errno)))"
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Watches `path` for the events in `mask`. Returns the watch, or -1 when the path cannot be
    /// watched (it does not exist, or is not a folder under `IN_ONLYDIR`). Adding a watch again
    /// only returns the one already there (with the new mask).
    @discardableResult
    func add(_ path: String, mask: UInt32) -> Int32 {
        inotify_add_watch(fd, path, mask)
    }

    /// Calls `handler` on `queue` whenever events are pending (it should `drain` them). The source
    /// returned is running; cancel it to stop.
    func readSource(on queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void) -> any DispatchSourceRead {
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler(handler: handler)
        source.resume()
        return source
    }

    /// Reads every pending event and hands each to `body`, in the order they came.
    func drain(_ body: (Event) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            // Each event: watch (4 bytes), mask (4), cookie (4), name length (4), then the name,
            // NUL-padded to that length.
            var offset = 0
            while offset + 16 <= count {
                let (watch, mask, length) = buffer.withUnsafeBytes { raw in
                    (raw.load(fromByteOffset: offset, as: Int32.self), raw.load(fromByteOffset: offset + 4, as: UInt32.self),
                     Int(raw.load(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
                offset += 16 + length
                body(Event(watch: watch, mask: mask, name: String(decoding: nameBytes, as: UTF8.self)))
            }
        }
    }
}
