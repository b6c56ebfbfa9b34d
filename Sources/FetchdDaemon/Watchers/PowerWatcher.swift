import Foundation
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Watches the power supply folder (`power_supply_dir`) with inotify and, when the power
/// changes, has the coordinator read it again and asks the wake clock for a wake, so a handler deferred
/// for AC power or battery runs soon after the condition holds.
///
/// On the real `/sys/class/power_supply` most drivers change an attribute's value without any
/// inotify event (sysfs notifies only through `sysfs_notify`, seen by poll(), not by inotify);
/// what shows there is the kernel's uevent for the supply (`PowerUevents`), which this watcher
/// also listens to. inotify covers a plain folder (tests, containers, `power_supply_dir`
/// elsewhere). Either wakes it; nothing is polled. The coordinator also reads the supplies again
/// on every wake, in case both miss a change.
final class PowerWatcher: Service, Sendable {
    private let conditions: any ConditionsSink
    private let directory: String
    private let logger: Logger
    /// Asked for a wake when the conditions change.
    private let wakes: any WakeRequests
    /// The supplies' files and folders.
    private let inotify = Inotify()
    /// The kernel uevent socket, when netlink is there.
    private let uevents: Int32?
    private let queue = DispatchQueue(label: "fetchd-power-watcher")

    /// Watches `directory` (the configured `power_supply_dir`; a reload's new value takes effect
    /// at the next start, and at every wake through the coordinator's own reads).
    init(conditions: any ConditionsSink, directory: String, logger: Logger, wakes: any WakeRequests) {
        self.conditions = conditions
        self.directory = directory
        self.logger = logger
        self.wakes = wakes
        let (socket, problem) = PowerUevents.open()
        uevents = socket
        if let problem { logger.info("power: no kernel uevents (\(problem)); changes show through inotify and at every wake") }
    }

    deinit {
        if let uevents { close(uevents) }
    }

    /// Runs until graceful shutdown.
    func run() async {
        if let problem = inotify.problem {
            logger.info("power: \(problem); the power is read at every wake only")
            try? await gracefulShutdown()
            return
        }
        addWatches()
        let (changes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let source = inotify.readSource(on: queue) { [self] in
            // Which event it was does not matter: the coordinator reads every supply again.
            inotify.drain { _ in }
            addWatches()  // a supply may have appeared
            continuation.yield()
        }
        let kernel = uevents.map { socket in
            let source = DispatchSource.makeReadSource(fileDescriptor: socket, queue: queue)
            source.setEventHandler { if PowerUevents.drain(socket) { continuation.yield() } }
            source.resume()
            return source
        }
        await withGracefulShutdownHandler {
            for await _ in changes {
                if await conditions.refreshPower() { wakes.wake(.conditions) }
            }
        } onGracefulShutdown: {
            continuation.finish()
        }
        source.cancel()
        kernel?.cancel()
    }

    /// Watches the folder (supplies appearing and going) and each supply's attributes that
    /// decide the conditions. Adding an existing watch again only returns its descriptor.
    private func addWatches() {
        inotify.add(directory, mask: UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM))
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names {
            for attribute in ["online", "capacity", "status", "type"] {
                inotify.add("\(directory)/\(name)/\(attribute)", mask: UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_ATTRIB))
            }
            // A supply replaced by a rename of its attribute files shows on its folder.
            inotify.add("\(directory)/\(name)", mask: UInt32(IN_CREATE | IN_MOVED_TO))
        }
    }
}
