import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs one `BusConnection` for its signal matches: every use of the connection happens on one
/// serial dispatch queue, under a lock, and the connection is processed whenever its socket is
/// readable. When the connection closes by itself (the bus went away) `onClose` says why, once.
/// One listener is one connection: to reconnect, open a new one.
///
/// Why a dispatch source on the bus's socket rather than a thread blocked in `sd_bus_wait`: the
/// daemon's other watchers already wait on dispatch sources, a blocked thread would need a
/// second descriptor to be woken for a prompt shutdown, and a cancelled source is that wake-up
/// for free: `close()` never waits. Reading readiness is enough for signals: the few messages
/// fetchd sends are small and written by blocking calls (`sd_bus_call` flushes), and whatever
/// such a call read while waiting for its reply is processed right after it.
public final class BusListener: Sendable {
    private struct State {
        var connection: BusConnection?
        var source: (any DispatchSourceRead)?
    }

    private let queue: DispatchQueue
    private let state = Mutex(State())
    private let onClose: @Sendable (BusError) -> Void

    private init(label: String, onClose: @escaping @Sendable (BusError) -> Void) {
        queue = DispatchQueue(label: label)
        self.onClose = onClose
    }

    deinit {
        state.withLock { state in
            state.source?.cancel()
            state.connection = nil
        }
    }

    /// Connects to `bus`, runs `setup` with the connection (install matches, ask for the current
    /// state), then processes it until `close()` or until it closes by itself. `setup` and the
    /// match handlers it installs run on the listener's queue and must not use the listener.
    /// A blocking call on the connection gives up after `callTimeoutSeconds`.
    public static func open(_ bus: BusConnection.Bus, label: String, callTimeoutSeconds: Double = 5,
                            setup: @escaping @Sendable (BusConnection) throws(BusError) -> Void,
                            onClose: @escaping @Sendable (BusError) -> Void) async throws(BusError) -> BusListener {
        let listener = BusListener(label: label, onClose: onClose)
        try await listener.onQueue { () throws(BusError) in
            try listener.connect(bus, callTimeoutSeconds: callTimeoutSeconds, setup: setup)
        }
        return listener
    }

    /// Runs `body` with the connection on the listener's queue (a method call, say), then runs
    /// the handlers of what arrived meanwhile. Throws if the listener is closed.
    public func perform<Result: Sendable>(
        _ body: @escaping @Sendable (BusConnection) throws(BusError) -> Result
    ) async throws(BusError) -> Result {
        try await onQueue { () throws(BusError) in
            let result = try self.state.withLock { state throws(BusError) -> Result in
                guard let connection = state.connection else {
                    throw BusError(operation: "use the bus", reason: "the connection is closed")
                }
                return try body(connection)
            }
            self.process()
            return result
        }
    }

    /// Stops processing and closes the connection. Never waits for the bus (at most for a match
    /// handler that is running); no handler runs afterwards, and `onClose` is not called.
    public func close() {
        state.withLock { state in
            state.source?.cancel()
            state.source = nil
            state.connection = nil
        }
    }

    /// Runs `work` on the queue and returns its result.
    private func onQueue<Result: Sendable>(
        _ work: @escaping @Sendable () throws(BusError) -> Result
    ) async throws(BusError) -> Result {
        let result: Swift.Result<Result, BusError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(BusError) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// On the queue: opens the connection, runs `setup`, and starts watching the socket.
    private func connect(_ bus: BusConnection.Bus, callTimeoutSeconds: Double,
                         setup: (BusConnection) throws(BusError) -> Void) throws(BusError) {
        try state.withLock { state throws(BusError) in
            let connection = try BusConnection(bus, callTimeoutSeconds: callTimeoutSeconds)
            try setup(connection)
            try connection.flush()
            let source = try SocketWatch.reading(connection.fileDescriptor, queue: queue) { [weak self] in self?.process() }
            state.connection = connection
            state.source = source
            source.resume()
        }
        process()  // what arrived during setup does not make the socket readable again
    }

    /// On the queue: runs the handlers of what has arrived; reports a closed connection once.
    private func process() {
        let failure = state.withLock { state -> BusError? in
            guard let connection = state.connection else { return nil }
            do throws(BusError) {
                try connection.processPending()
                return nil
            } catch {
                state.source?.cancel()
                state.source = nil
                state.connection = nil
                return error
            }
        }
        if let failure { onClose(failure) }
    }
}
