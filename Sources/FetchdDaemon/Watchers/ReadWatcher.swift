import FetchdConfig
import FetchdCore
import FetchdSnapshots
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The `reads` usage source: another process opening a handler's snapshot content counts as a
/// use. inotify watches, per handler with `usage = ["reads"]`: the cache root (its folder
/// appears), its folder (`latest` is swapped by a rename) and its current version folder
/// (`content` is opened). The daemon itself never opens a published `content` file (it hashes
/// the staged file before publishing, and reads only `meta.json`); the handler's own program
/// may (`FETCHD_PREVIOUS`), so opens while the handler runs are not counted. Opens within a
/// session (`UseFolder`, 5 minutes) of the last recorded one are folded into it.
final class ReadWatcher: Service, Sendable {
    private struct Watches {
        /// What each watch descriptor is: the root, a handler's folder, or its version folder.
        var roles: [Int32: Role] = [:]
        /// The handlers watched.
        var handlers: Set<String> = []
    }

    private enum Role { case root, handlerFolder(String), version(String) }

    private let uses: any UseSink
    /// Asked for a wake after a recorded use: the plan changed, the next fetch may be sooner.
    private let wakes: any WakeRequests
    private let layout: SnapshotLayout
    private let logger: Logger
    /// The cache root, the handlers' folders and their current versions.
    private let inotify = Inotify()
    private let watches = Mutex(Watches())
    private let queue = DispatchQueue(label: "fetchd-read-watcher")
    private let folder = UseFolder()
    /// How long after a handler's fetch its own program's opens may still arrive from inotify.
    static let ownReadsSeconds = 2.0

    /// Watches the snapshots under `cacheDirectory` (the configured cache root).
    init(uses: any UseSink, cacheDirectory: String, logger: Logger, wakes: any WakeRequests) {
        self.uses = uses
        self.wakes = wakes
        self.layout = SnapshotLayout(root: cacheDirectory)
        self.logger = logger
    }

    /// Runs until graceful shutdown.
    func run() async throws {
        if let problem = inotify.problem {
            logger.warning("usage source \"reads\" unavailable: \(problem)")
            // Returning would end the whole service group: wait for shutdown like the others.
            try? await gracefulShutdown()
            return
        }
        await refresh()
        let (opens, continuation) = AsyncStream<String>.makeStream()
        let source = inotify.readSource(on: queue) { [self] in
            for handler in drainEvents() { continuation.yield(handler) }
        }
        await withGracefulShutdownHandler {
            for await handler in opens { await record(handler) }
        } onGracefulShutdown: {
            continuation.finish()
        }
        source.cancel()
    }

    /// Watches the handlers that learn from reads in the configuration now in force (at start
    /// and after a reload).
    func refresh() async {
        let wanted = Set(await uses.handlerNames(learningFrom: .reads))
        watches.withLock { $0.handlers = wanted }
        add(layout.root, mask: UInt32(IN_CREATE | IN_ONLYDIR), role: .root)
        for handler in wanted { watchHandler(handler) }
    }

    private func watchHandler(_ handler: String) {
        let folder = layout.directory(of: handler)
        add(folder, mask: UInt32(IN_MOVED_TO | IN_CREATE | IN_ONLYDIR), role: .handlerFolder(handler))
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: layout.latestLink(of: handler)) {
            add("\(folder)/\(target)", mask: UInt32(IN_OPEN | IN_ONLYDIR), role: .version(handler))
        }
    }

    private func add(_ path: String, mask: UInt32, role: Role) {
        let wd = inotify.add(path, mask: mask)
        if wd >= 0 { watches.withLock { $0.roles[wd] = role } }
    }

    /// Reads every pending event; returns the handlers whose content was opened.
    private func drainEvents() -> [String] {
        var opened: [String] = []
        inotify.drain { event in
            if let handler = handle(wd: event.watch, mask: event.mask, name: event.name) { opened.append(handler) }
        }
        return opened
    }

    /// Acts on one event; returns the handler when it was an open of its content.
    private func handle(wd: Int32, mask: UInt32, name: String) -> String? {
        guard let role = watches.withLock({ $0.roles[wd] }) else { return nil }
        if mask & UInt32(IN_IGNORED) != 0 {  // the folder went away (an old version pruned)
            _ = watches.withLock { $0.roles.removeValue(forKey: wd) }
            return nil
        }
        switch role {
        case .root:
            if watches.withLock({ $0.handlers.contains(name) }) { watchHandler(name) }
        case .handlerFolder(let handler):
            if name == SnapshotLayout.latestName { watchHandler(handler) }  // a new version: watch it
        case .version(let handler):
            if name == SnapshotLayout.contentName, mask & UInt32(IN_OPEN) != 0, mask & UInt32(IN_ISDIR) == 0 { return handler }
        }
        return nil
    }

    private func record(_ handler: String) async {
        // The handler's own program reading its previous snapshot is not a use; its opens may
        // arrive from inotify a moment after it ended.
        guard await !uses.ranRecently(handler, within: Self.ownReadsSeconds) else { return }
        let now = Date()
        if watches.withLock({ $0.handlers.contains(handler) }), folder.startsSession(handler, at: now) {
            _ = await uses.recordUse(handler, source: .reads, at: now)
            wakes.wake(.use)
        }
    }
}
