import FetchdConfig
import FetchdSystemd
import Foundation
import Logging
import ServiceLifecycle

/// The `session` usage source: logind saying that someone has just started using the machine
/// (a session unlocked or made active, the machine resumed; see `LogindSignals`) is a use of
/// every handler with `usage = ["session"]`, as iOS fetches when the device is unlocked. Uses
/// within a session window (`UseFolder`) of the last recorded one are folded into it.
///
/// The watcher connects to the system bus only while some handler opts in, and follows reloads
/// (`refresh()`): handlers opting in or out take effect at once, and the connection is opened
/// or closed with them. Without a system bus, or when it goes away, it logs one warning, retries
/// with growing delays and reconnects when the bus is back; without logind it logs one warning
/// and waits for logind to appear on the bus. It never ends the daemon.
final class SessionWatcher: Service, Sendable {
    private enum Event: Sendable {
        /// The configuration may have changed (at start and after a reload).
        case refresh
        /// A retry delay ran out.
        case retry
        /// logind reported something.
        case logind(LogindSignals.Event)
        /// The bus connection closed by itself.
        case closed(BusError)
    }

    private let uses: any UseSink
    private let logger: Logger
    /// Asked for a wake after a recorded use: the plan changed, the next fetch may be sooner.
    private let wakes: any WakeRequests
    private let bus: BusConnection.Bus
    private let folder = UseFolder()
    private let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation

    /// `bus` is the system bus but for tests of the watcher itself.
    init(uses: any UseSink, logger: Logger, bus: BusConnection.Bus = .system, wakes: any WakeRequests) {
        self.uses = uses
        self.logger = logger
        self.bus = bus
        self.wakes = wakes
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    /// Takes the configuration now in force into account (after a reload).
    func refresh() { continuation.yield(.refresh) }

    /// What the run loop keeps between events.
    private struct Link {
        var bus = BusLink()
        /// Whether logind's absence has been logged already.
        var logindWarned = false
    }

    /// Runs until graceful shutdown. Each event is handled in turn; retry delays run as child
    /// tasks that are cancelled at shutdown, and `close()` on the bus never waits, so shutdown
    /// takes at most the event in hand (a connection attempt is bounded by the call timeout).
    func run() async {
        continuation.yield(.refresh)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                var link = Link()
                for await event in events {
                    switch event {
                    case .refresh, .retry:
                        if case .retry = event { link.bus.retryDue() }
                        await connectIfWanted(&link, group: &group)
                    case .closed(let error):
                        link.bus.lost()
                        failed(&link, "the system bus connection closed (\(error))", group: &group)
                    case .logind(.present(let present)):
                        logindPresence(present, &link)
                    case .logind(.use(let what)):
                        await record(what)
                    }
                }
                _ = link.bus.leave()
                group.cancelAll()
            }
        } onGracefulShutdown: { [continuation] in
            continuation.finish()
        }
    }

    /// The handlers that learn from session activity in the configuration now in force.
    private func optedIn() async -> [String] {
        await uses.handlerNames(learningFrom: .session)
    }

    private func connectIfWanted(_ link: inout Link, group: inout DiscardingTaskGroup) async {
        guard await !optedIn().isEmpty else {
            if link.bus.leave() {
                logger.info("usage source \"session\": no handler uses it any more; left the \(bus)")
            }
            link = Link()
            return
        }
        guard link.bus.mayConnect else { return }
        let continuation = self.continuation
        let signals = LogindSignals { continuation.yield(.logind($0)) }
        do throws(BusError) {
            let again = try await link.bus.open(
                bus, label: "fetchd-session-watcher", setup: { connection throws(BusError) in try signals.install(on: connection) },
                onClose: { continuation.yield(.closed($0)) })
            if again {
                logger.notice("usage source \"session\": connected to the \(bus) again")
            } else {
                logger.info("usage source \"session\": watching logind's signals on the \(bus)")
            }
        } catch {
            failed(&link, "cannot watch logind on the \(bus) (\(error))", group: &group)
        }
    }

    /// Logs a failure to reach the bus (the first of an outage as a warning) and retries later.
    private func failed(_ link: inout Link, _ problem: String, group: inout DiscardingTaskGroup) {
        let continuation = self.continuation
        link.bus.failed(problem, logger: logger, prefix: "usage source \"session\"", firstLog: {
            logger.warning("usage source \"session\": \($0); no session uses are recorded until it is back, retrying")
        }, in: &group) { continuation.yield(.retry) }
    }

    private func logindPresence(_ present: Bool, _ link: inout Link) {
        if present, link.logindWarned {
            logger.notice("usage source \"session\": logind is on the \(bus) again")
            link.logindWarned = false
        } else if !present, !link.logindWarned {
            logger.warning("usage source \"session\": logind (\(LogindSignals.busName)) is not on the \(bus); no session uses are recorded until it appears")
            link.logindWarned = true
        }
    }

    /// Records a use for every handler that opts in, unless it falls in that handler's session.
    private func record(_ what: String) async {
        let now = Date()
        var recorded: [String] = []
        for handler in await optedIn() where folder.startsSession(handler, at: now) {
            _ = await uses.recordUse(handler, source: .session, at: now)
            recorded.append(handler)
        }
        guard !recorded.isEmpty else {
            logger.debug("session activity (\(what)): within the session of the last recorded use")
            return
        }
        logger.info("session activity (\(what)): a use of \(recorded.joined(separator: ", "))")
        wakes.wake(.use)
    }
}
