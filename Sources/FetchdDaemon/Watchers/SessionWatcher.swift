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
/// with growing delays and reconnects when the bus is back (`BusWatchLoop`); without logind it
/// logs one warning and waits for logind to appear on the bus. It never ends the daemon.
final class SessionWatcher: Service, Sendable {
    private let uses: any UseSink
    private let logger: Logger
    /// Asked for a wake after a recorded use: the plan changed, the next fetch may be sooner.
    private let wakes: any WakeRequests
    private let folder = UseFolder()
    /// Runs the watcher: `run()` and `refresh()` are the loop's (`BusWatching`).
    let loop: BusWatchLoop<SessionWatcher>

    /// `bus` is the system bus but for tests of the watcher itself.
    init(uses: any UseSink, logger: Logger, bus: BusConnection.Bus = .system, wakes: any WakeRequests) {
        self.uses = uses
        self.logger = logger
        self.wakes = wakes
        loop = BusWatchLoop(bus: bus, label: "fetchd-session-watcher", logger: logger,
                            logPrefix: "usage source \"session\"", purpose: "watch logind", state: LinkState())
    }

    /// The handlers that learn from session activity in the configuration now in force.
    private func optedIn() async -> [String] {
        await uses.handlerNames(learningFrom: .session)
    }

    private func logindPresence(_ present: Bool, _ state: inout LinkState) {
        if present, state.logindWarned {
            logger.notice("usage source \"session\": logind is on the \(bus) again")
            state.logindWarned = false
        } else if !present, !state.logindWarned {
            logger.warning("usage source \"session\": logind (\(LogindSignals.busName)) is not on the \(bus); no session uses are recorded until it appears")
            state.logindWarned = true
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

extension SessionWatcher: BusWatching {
    /// logind's, installed on each connection.
    typealias Signals = LogindSignals

    /// What the watcher has logged, kept until it leaves the bus.
    struct LinkState {
        /// Whether logind's absence has been logged already.
        var logindWarned = false
    }

    /// Whether some handler opts in.
    func wanted() async -> Bool {
        await !optedIn().isEmpty
    }

    /// Says that logind is watched, or that the bus is back after an outage.
    func connected(again: Bool) {
        if again {
            logger.notice("usage source \"session\": connected to the \(bus) again")
        } else {
            logger.info("usage source \"session\": watching logind's signals on the \(bus)")
        }
    }

    /// Says so when the bus is left.
    func left(wasOpen: Bool) async {
        if wasOpen {
            logger.info("usage source \"session\": no handler uses it any more; left the \(bus)")
        }
    }

    /// Logged as a warning: no session uses are recorded meanwhile.
    func outageBegan(_ problem: String) {
        logger.warning("usage source \"session\": \(problem); no session uses are recorded until it is back, retrying")
    }

    /// Follows logind's presence and records the uses it reports.
    func handle(_ event: LogindSignals.Event, link: inout BusWatchLoop<SessionWatcher>.Link) async {
        switch event {
        case .present(let present):
            logindPresence(present, &link.state)
        case .use(let what):
            await record(what)
        }
    }
}
