import FetchdSystemd
import Logging
import ServiceLifecycle

/// The event loop of a bus watcher (`SessionWatcher`, `NetworkWatcher`, `PowerProfileWatcher`;
/// what is the watcher's own is `BusWatching`): connected to the bus only while some handler
/// wants it, following reloads (`refresh()`); after a failed attempt or a closed connection,
/// reconnecting with growing delays (`BusLink`, `BusReconnect`). It never ends the daemon.
///
/// Events are handled one at a time on the task that runs `run`: reloads, retries, the
/// connection closing and whatever the watcher's signals report.
final class BusWatchLoop<Watcher: BusWatching>: Sendable {
    private enum Event: Sendable {
        /// The configuration may have changed (at start and after a reload).
        case refresh
        /// A retry delay ran out.
        case retry
        /// The watcher's signals reported something.
        case signal(Watcher.Signals.Event)
        /// The bus connection closed by itself.
        case closed(BusError)
    }

    /// What the loop keeps between events.
    struct Link {
        /// The connection, and when to try again after a failure.
        var bus = BusLink()
        /// The signals installed on the connection, once one opened.
        var signals: Watcher.Signals?
        /// The watcher's own.
        var state: Watcher.LinkState
    }

    /// The bus followed: the system bus but for tests of the watchers.
    let bus: BusConnection.Bus
    private let label: String
    private let logger: Logger
    private let logPrefix: String
    private let purpose: String
    /// The watcher's state at start, and again each time it leaves the bus.
    private let fresh: Watcher.LinkState
    private let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    /// Waits for a missing bus socket, for a watcher wanted by default (nil for the others,
    /// which retry after growing delays): an inotify instance only where it can be used.
    private let socketWait: BusSocketWait?

    /// A loop on `bus`, its connection's queue named `label`. `logPrefix` heads its log lines
    /// ("network"); `purpose` says what connecting is for, to complete "cannot … on the system
    /// bus" ("follow NetworkManager"); the watcher's state starts as `state`. With
    /// `waitsForBusSocket`, a missing bus socket is waited for (`BusSocketWait`) instead of
    /// retried after growing delays: for a watcher wanted by default, which would otherwise
    /// wake an idle daemon on a machine without the bus.
    init(bus: BusConnection.Bus, label: String, logger: Logger, logPrefix: String, purpose: String,
         state: Watcher.LinkState, waitsForBusSocket: Bool = false) {
        self.bus = bus
        self.label = label
        self.logger = logger
        self.logPrefix = logPrefix
        self.purpose = purpose
        fresh = state
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
        socketWait = waitsForBusSocket ? BusSocketWait(label: label + "-socket") : nil
    }

    /// Takes the configuration now in force into account (after a reload).
    func refresh() { continuation.yield(.refresh) }

    /// Runs `watcher` until graceful shutdown. Retry delays run as child tasks that are
    /// cancelled at shutdown, and `close()` on the bus never waits, so shutdown takes at most the
    /// event in hand (a connection attempt is bounded by the call timeout).
    func run(_ watcher: Watcher) async {
        continuation.yield(.refresh)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                var link = Link(state: fresh)
                for await event in events {
                    switch event {
                    case .refresh, .retry:
                        if case .retry = event { link.bus.retryDue() }
                        await connectIfWanted(watcher, &link, group: &group)
                    case .closed(let error):
                        link.bus.lost()
                        await watcher.closed(&link.state)
                        failed(watcher, &link, "the system bus connection closed (\(error))", group: &group)
                    case .signal(let signal):
                        await watcher.handle(signal, link: &link)
                    }
                }
                _ = link.bus.leave()
                socketWait?.cancel()
                group.cancelAll()
            }
        } onGracefulShutdown: { [continuation] in
            continuation.finish()
        }
    }

    /// Connects when the watcher wants the bus and may connect now; leaves it (and starts
    /// afresh) when it no longer wants it.
    private func connectIfWanted(_ watcher: Watcher, _ link: inout Link, group: inout DiscardingTaskGroup) async {
        guard await watcher.wanted() else {
            socketWait?.cancel()
            let wasOpen = link.bus.leave()
            link = Link(state: fresh)
            await watcher.left(wasOpen: wasOpen)
            return
        }
        guard link.bus.mayConnect else { return }
        let continuation = self.continuation
        let signals = Watcher.Signals { continuation.yield(.signal($0)) }
        do throws(BusError) {
            let again = try await link.bus.open(
                bus, label: label, setup: { connection throws(BusError) in try signals.install(on: connection) },
                onClose: { continuation.yield(.closed($0)) })
            link.signals = signals
            watcher.connected(again: again)
        } catch {
            let problem = "cannot \(purpose) on the \(bus) (\(error))"
            if let socketWait, socketWait.start(for: bus, { continuation.yield(.retry) }) {
                link.bus.waitingForSocket(problem + "; waiting for its socket to appear", logger: logger, prefix: logPrefix,
                                          firstLog: { watcher.outageBegan($0) })
            } else {
                failed(watcher, &link, problem, group: &group)
            }
        }
    }

    /// Has the watcher log the first failure of an outage (later ones go to debug level) and
    /// retries later.
    private func failed(_ watcher: Watcher, _ link: inout Link, _ problem: String, group: inout DiscardingTaskGroup) {
        let continuation = self.continuation
        link.bus.failed(problem, logger: logger, prefix: logPrefix, firstLog: { watcher.outageBegan($0) },
                        in: &group) { continuation.yield(.retry) }
    }
}
