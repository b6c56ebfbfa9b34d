import FetchdSystemd
import Synchronization

/// Hands each `FetchCompleted` the client's connection receives to every stream a caller asked
/// for (`FetchdClient.completions()`), from the connection's queue; finishes them all when the
/// connection closes. Signals are taken only from the connection that answered the client's
/// last call: any peer on the bus can address a signal to the client, but only fetchd answers
/// as `org.fetchd.Fetchd1`.
final class CompletionFeed: Sendable {
    private struct State {
        var streams: [Int: AsyncStream<FetchCompleted>.Continuation] = [:]
        var nextID = 0
        /// fetchd's unique connection name (`:1.42`), from its last reply.
        var daemon: String?
        var finished = false
    }

    /// Events a stream keeps for a caller that reads slower than fetches end: enough for every
    /// handler a uid may register, and no unbounded growth for a caller that stopped reading.
    static let buffered = 64

    private let state = Mutex(State())

    /// A new stream of every event from now on; already finished when the connection is closed.
    func stream() -> AsyncStream<FetchCompleted> {
        let (stream, continuation) = AsyncStream.makeStream(of: FetchCompleted.self,
                                                            bufferingPolicy: .bufferingNewest(Self.buffered))
        let id = state.withLock { state -> Int? in
            guard !state.finished else { return nil }
            defer { state.nextID += 1 }
            state.streams[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.streams.removeValue(forKey: id) } }
        return stream
    }

    /// Whether the connection has closed.
    var isFinished: Bool { state.withLock { $0.finished } }

    /// Remembers who answered a call as fetchd.
    func answered(by sender: String?) {
        guard let sender else { return }
        state.withLock { $0.daemon = sender }
    }

    /// On the connection's queue: a `FetchCompleted` signal arrived.
    func deliver(_ signal: BusMessage) {
        let streams = state.withLock { state in
            state.daemon != nil && signal.sender == state.daemon ? Array(state.streams.values) : []
        }
        guard !streams.isEmpty,
              let name = try? signal.readString(), let result = try? signal.readString(),
              let version = try? signal.readString() else { return }
        let event = FetchCompleted(name: name, result: result, version: version.isEmpty ? nil : version)
        for stream in streams { stream.yield(event) }
    }

    /// The connection closed: every stream ends, and later ones are born ended.
    func finish() {
        let streams = state.withLock { state in
            state.finished = true
            defer { state.streams = [:] }
            return Array(state.streams.values)
        }
        for stream in streams { stream.finish() }
    }
}
