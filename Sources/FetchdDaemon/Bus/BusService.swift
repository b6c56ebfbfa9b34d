import FetchdConfig
import FetchdCore
import FetchdSystemd
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Offers fetchd's D-Bus API (`org.fetchd.Fetchd1`, fetchd-dbus(7)) on the bus `dbus_api`
/// names, for as long as the daemon runs: each call is read on the bus's queue
/// (`BusRequest`), carried out by `BusMethods` and answered once; every fetch's end of a
/// registered handler is sent as `FetchCompleted` to the connections of its uid alone.
///
/// Without the bus it logs once and waits for a reload (`refresh()`): a machine without D-Bus
/// must not pay a timer for it. A connection lost after it worked is tried again a few times.
final class BusService: Service, FetchCompletionObserver {
    /// The bus named by `dbus_api` for this daemon; nil for "off".
    static func bus(for setting: DaemonConfig.DBusAPI, environment: [String: String] = ProcessInfo.processInfo.environment) -> BusConnection.Bus? {
        switch setting {
        case .off: return nil
        case .system: return .system
        case .session: return .user
        case .auto: return getuid() != 0 && environment["XDG_RUNTIME_DIR"] != nil ? .user : .system
        }
    }

    private struct Listeners {
        /// Per uid, the connections that called a method, newest last.
        var byUID: [UInt32: [String]] = [:]
    }

    /// Calls carried out at once; more are refused with `LimitsExceeded` until some end.
    static let maxCallsInFlight = 256
    /// Connections per uid that get `FetchCompleted` (the newest callers).
    static let maxListenersPerUID = 16

    private let coordinator: FetchCoordinator
    private let logger: Logger
    private let methods: BusMethods
    private let polkit: PolkitAuthority
    private let objects = HandlerObjects()
    /// Run after a call changed the handlers in force (a registration, its removal).
    private let handlersChanged: @Sendable () async -> Void
    private let server = Mutex<BusServer?>(nil)
    private let listeners = Mutex(Listeners())
    private let inFlight = Atomic<Int>(0)
    private let events: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    /// A service for `coordinator`; `handlersChanged` follows every registration and removal,
    /// as a reload's changes are followed.
    init(coordinator: FetchCoordinator, logger: Logger, handlersChanged: @escaping @Sendable () async -> Void) {
        self.coordinator = coordinator
        self.logger = logger
        self.handlersChanged = handlersChanged
        polkit = PolkitAuthority()
        methods = BusMethods(coordinator: coordinator, polkit: polkit)
        (events, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Tries the bus again if it is not connected, and follows the handlers now in force (after
    /// a reload).
    func refresh() {
        wake.yield()
        Task { await self.refreshObjects() }
    }

    /// Serves until graceful shutdown.
    func run() async {
        await coordinator.observeCompletions(self)
        await cancelWhenGracefulShutdown { await self.serve() }
        server.withLock { $0?.close(); $0 = nil }
    }

    private func serve() async {
        var retries = 0
        var logged = false
        while !Task.isCancelled {
            guard let bus = Self.bus(for: await coordinator.config.daemon.dbusAPI) else {
                for await _ in events { break }  // until a reload, which may turn it on
                continue
            }
            let (closed, onClose) = AsyncStream.makeStream(of: BusError.self)
            do throws(BusError) {
                let opened = try await BusServer.open(
                    bus, object: .init(name: BusAPI.name, path: BusAPI.path, version: Defaults.version,
                                       scope: bus == .user ? "user" : "system", handlers: objects),
                    label: "fetchd.dbus-api", onCall: { [weak self] in self?.handle($0) },
                    onClose: { onClose.yield($0); onClose.finish() })
                server.withLock { $0 = opened }
                polkit.use(bus == .user ? .session : .system(opened))
                await refreshObjects()
                logger.notice("D-Bus API \(BusAPI.name) on the \(bus)")
                logged = false
                // A bus that went away (restarted) is tried again a few times over half a minute.
                retries = Self.retriesAfterLoss
                for await error in closed {
                    logger.warning("D-Bus API: the \(bus) connection closed (\(error)); connecting again")
                }
                server.withLock { $0?.close(); $0 = nil }
                polkit.use(.none)
            } catch {
                if !logged {
                    logger.notice("D-Bus API not offered: cannot serve \(BusAPI.name) on the \(bus) (\(error)); a reload tries again")
                    logged = true
                }
            }
            if Task.isCancelled { return }
            if retries > 0 {
                try? await Task.sleep(for: .seconds(1 << (Self.retriesAfterLoss - retries)))
                retries -= 1
            } else {
                for await _ in events { break }  // no timer while there is no bus: a reload asks again
            }
        }
    }

    /// Attempts after a lost connection (1, 2, 4, 8 and 16 s apart) before waiting for a reload.
    static let retriesAfterLoss = 5

    /// On the bus's queue: reads the call and carries it out off the queue.
    private func handle(_ call: BusIncomingCall) {
        let request: BusRequest
        do throws(BusReplyError) { request = try BusRequest(call) } catch {
            call.responder.fail(error)
            return
        }
        guard inFlight.add(1, ordering: .relaxed).newValue <= Self.maxCallsInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            call.responder.fail(BusReplyError(name: "org.freedesktop.DBus.Error.LimitsExceeded",
                                              message: "fetchd is answering \(Self.maxCallsInFlight) calls already; try again shortly"))
            return
        }
        if let sender = request.sender { remember(sender, of: request.uid) }
        let responder = call.responder
        Task {
            let reply = await self.methods.perform(request)
            responder.reply(reply)
            if request.changesHandlers, !reply.isError {
                await self.handlersChanged()
                await self.refreshObjects()
            }
            self.inFlight.subtract(1, ordering: .relaxed)
        }
    }

    private func remember(_ sender: String, of uid: UInt32) {
        listeners.withLock { listeners in
            var names = listeners.byUID[uid, default: []].filter { $0 != sender }
            names.append(sender)
            listeners.byUID[uid] = Array(names.suffix(Self.maxListenersPerUID))
        }
    }

    /// Sends `FetchCompleted(name, result, version)` to the connections of the handler's uid,
    /// then the handler object's changed properties.
    func fetchCompleted(_ record: CompletedFetch, of handler: HandlerConfig) {
        guard let uid = handler.registeredBy, let name = RegisteredName(qualified: handler.name) else { return }
        let destinations = listeners.withLock { $0.byUID[uid] ?? [] }
        guard let server = server.withLock({ $0 }) else { return }
        for destination in destinations {
            server.emit(path: BusAPI.path, interface: BusAPI.interface, member: "FetchCompleted", destination: destination,
                        strings: [name.base, record.result.name, record.version ?? ""])
        }
        Task {
            let changed = await self.updateObject(name)
            guard !changed.isEmpty else { return }
            for destination in destinations {
                server.emitPropertiesChanged(path: HandlerObjects.path(of: name), interface: HandlerObjects.interface,
                                             destination: destination, changed: changed)
            }
        }
    }

    /// The handler objects of the registrations in force, their properties read again in one
    /// status computation.
    private func refreshObjects() async {
        let config = await coordinator.config
        let names = config.registeredHandlers.compactMap { RegisteredName(qualified: $0.name) }
        objects.keep(only: names, controlGroupID: config.daemon.controlGroupID)
        guard !names.isEmpty else { return }
        let statuses = Dictionary(await coordinator.status(markSeen: false).handlers.map { ($0.name, $0) }) { first, _ in first }
        for name in names {
            guard let status = statuses[name.qualified] else { continue }
            _ = objects.update(name, status: status, version: coordinator.snapshots.currentVersion(of: name.qualified))
        }
    }

    /// Reads `name`'s properties again; returns the ones that changed.
    private func updateObject(_ name: RegisteredName) async -> [BusEntry] {
        guard let status = await coordinator.status(of: name.qualified)?.handlers.first else { return [] }
        return objects.update(name, status: status, version: coordinator.snapshots.currentVersion(of: name.qualified))
    }
}
