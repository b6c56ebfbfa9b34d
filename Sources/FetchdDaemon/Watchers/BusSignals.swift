import FetchdSystemd

/// The signals a bus watcher follows on a connection (`LogindSignals`,
/// `NetworkManagerSignals`, `PowerProfileSignals`): made anew for each connection with where to
/// report, then installed on it as it opens (`BusWatchLoop`).
protocol BusSignals: Sendable {
    /// What the signals report.
    associatedtype Event: Sendable

    /// Signals that give `report` every event, on the bus listener's queue.
    init(report: @escaping @Sendable (Event) -> Void)

    /// Installs the matches on a connection that is opening (`BusListener.open`'s `setup`).
    func install(on connection: BusConnection) throws(BusError)
}
