import FetchdSystemd

/// A bus watcher (`SessionWatcher`, `NetworkWatcher`, `PowerProfileWatcher`), run by its
/// `BusWatchLoop`: the loop is the same for every watcher, and this says what is each one's own:
/// which signals it follows, when it wants the bus, what it makes of what the signals report,
/// and how it words connecting, leaving and an outage. Each call comes from the loop's one task,
/// in turn.
///
/// The watcher's `run()` (as a `Service`) and `refresh()` are the loop's, below.
protocol BusWatching: Sendable {
    /// The signals installed on each connection.
    associatedtype Signals: BusSignals
    /// What the watcher keeps between events (what it has logged, say); started afresh when it
    /// leaves the bus.
    associatedtype LinkState: Sendable

    /// The loop that runs the watcher.
    var loop: BusWatchLoop<Self> { get }

    /// Whether some handler wants the bus, in the configuration now in force (asked at start,
    /// after every reload and before every retry).
    func wanted() async -> Bool

    /// The connection opened with the signals installed; `again` when this ends an outage.
    func connected(again: Bool)

    /// No handler wants the bus any more; `wasOpen` when a connection was open and is now left.
    func left(wasOpen: Bool) async

    /// The first failure of an outage (`problem` says what failed): the loop retries with growing
    /// delays, and logs the later failures at debug level itself.
    func outageBegan(_ problem: String)

    /// The connection closed by itself, before the loop reports the outage and retries.
    func closed(_ state: inout LinkState) async

    /// The signals reported `event`; `link` holds the connection and the watcher's state.
    func handle(_ event: Signals.Event, link: inout BusWatchLoop<Self>.Link) async
}

extension BusWatching {
    /// The bus followed: the system bus but for tests of the watcher itself.
    var bus: BusConnection.Bus { loop.bus }

    /// Takes the configuration now in force into account (after a reload).
    func refresh() { loop.refresh() }

    /// Runs until graceful shutdown (`BusWatchLoop.run` says why this never waits long).
    func run() async { await loop.run(self) }

    /// Nothing to do when the connection closes by itself.
    func closed(_ state: inout LinkState) async {}
}
