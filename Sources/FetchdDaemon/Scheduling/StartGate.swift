import FetchdClock
import Synchronization

/// Holds the daemon's first wake until a watcher has had its first look at what the first wake
/// decides by (`PowerProfileWatcher`: power-saver), at most `limitSeconds`: a laptop starting in
/// power-saver must not run the scheduled fetches it holds back just because the profile was not
/// read yet. Opened once; a gate opened before the wait lets it through at once.
final class StartGate: Sendable {
    /// The longest the first wake waits, in seconds: a bus call's timeout, so a bus that never
    /// answers delays the first wake no more than it delays the watcher.
    static let limitSeconds = 5.0

    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    /// Whether the gate has been waited on: an AsyncStream takes one reader.
    private let waited = Mutex(false)

    /// A closed gate.
    init() { (stream, continuation) = AsyncStream.makeStream(of: Void.self) }

    /// Lets the first wake through; later calls do nothing.
    func open() { continuation.finish() }

    /// Returns once the gate is open, or after `limitSeconds`, or at once when waited on before.
    func pass(limitSeconds: Double = StartGate.limitSeconds) async {
        guard waited.withLock({ waited in defer { waited = true }; return !waited }) else { return }
        let stream = self.stream
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in stream {} }
            group.addTask { _ = await DeadlineTimer.shared.sleep(for: .seconds(limitSeconds)) }
            await group.next()
            group.cancelAll()
        }
    }
}
