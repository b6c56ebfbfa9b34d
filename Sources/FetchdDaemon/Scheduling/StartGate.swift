import Synchronization

/// Holds the daemon's first wake until a watcher has had its first look at what the first wake
/// decides by (`PowerProfileWatcher`: power-saver), at most `limitSeconds`: a laptop starting in
/// power-saver must not run the scheduled fetches it holds back just because the profile was not
/// read yet. Opened once; a gate opened before the wait lets it through at once.
final class StartGate: Sendable {
    /// The longest the first wake waits, in seconds: a bus call's timeout, so a bus that never
    /// answers delays the first wake no more than it delays the watcher.
    static let limitSeconds = 5.0

    /// Kept when sent before the wait: an opening is never lost.
    private let opened = WakeSignal()
    /// Whether the gate has been waited on: only the first wake waits.
    private let waited = Mutex(false)

    /// A closed gate.
    init() {}

    /// Lets the first wake through; later calls do nothing.
    func open() { opened.signal() }

    /// Returns once the gate is open, or after `limitSeconds`, or at once when waited on before.
    func pass(limitSeconds: Double = StartGate.limitSeconds) async {
        guard waited.withLock({ waited in defer { waited = true }; return !waited }) else { return }
        await opened.wait(atMost: .milliseconds(Int64(limitSeconds * 1000)))
    }
}
