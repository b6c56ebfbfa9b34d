import CSystemdShim
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Serves fetchd's D-Bus object on one bus connection: method calls reach `onCall` with a
/// `BusResponder` that answers each exactly once, signals go out with `emit`. As with
/// `BusListener`, the connection is used only on one serial queue, under a lock; its socket is
/// watched by a dispatch source for reading, and for writing only while sd-bus holds bytes it
/// could not write yet, so an idle connection costs no wake-up. When the connection closes by
/// itself (the bus went away) `onClose` says why, once; to serve again, open a new server.
public final class BusServer: Sendable {
    /// What the server publishes.
    public struct Object: Sendable {
        /// The well-known name to own (`org.fetchd.Fetchd1`).
        public var name: String
        /// The object's path (`/org/fetchd/Fetchd1`).
        public var path: String
        /// The `Version` property.
        public var version: String
        /// The `Scope` property: `system` or `user`.
        public var scope: String
        /// The handler objects beside it, if any.
        public var handlers: (any BusHandlerObjects)?

        /// An object description.
        public init(name: String, path: String, version: String, scope: String, handlers: (any BusHandlerObjects)? = nil) {
            self.name = name
            self.path = path
            self.version = version
            self.scope = scope
            self.handlers = handlers
        }
    }

    private struct State {
        var connection: BusConnection?
        var reader: (any DispatchSourceRead)?
        var writer: (any DispatchSourceWrite)?
    }

    private let queue: DispatchQueue
    private let state = Mutex(State())
    private let onCall: @Sendable (BusIncomingCall) -> Void
    private let onClose: @Sendable (BusError) -> Void
    /// The handler objects served, whose callbacks reach them through the server.
    let handlerObjects: (any BusHandlerObjects)?

    private init(label: String, handlerObjects: (any BusHandlerObjects)?, onCall: @escaping @Sendable (BusIncomingCall) -> Void,
                 onClose: @escaping @Sendable (BusError) -> Void) {
        queue = DispatchQueue(label: label)
        self.handlerObjects = handlerObjects
        self.onCall = onCall
        self.onClose = onClose
    }

    deinit { stopWatching() }

    /// Connects to `bus`, publishes `object` and takes its name. `onCall` runs on the server's
    /// queue for every method call: it reads the arguments there (the call's message is valid
    /// only during it) and answers through the call's responder, from anywhere, later.
    public static func open(_ bus: BusConnection.Bus, object: Object, label: String,
                            onCall: @escaping @Sendable (BusIncomingCall) -> Void,
                            onClose: @escaping @Sendable (BusError) -> Void) async throws(BusError) -> BusServer {
        let server = BusServer(label: label, handlerObjects: object.handlers, onCall: onCall, onClose: onClose)
        try await server.onQueue { () throws(BusError) in try server.connect(bus, object: object) }
        return server
    }

    /// Stops serving and closes the connection; calls not answered yet are dropped (their callers
    /// see the connection go). Never waits for the bus.
    public func close() { stopWatching() }

    /// Sends the signal `member` of `interface` from `path` with string arguments, to
    /// `destination` alone (a unique name) or, when nil, to everyone listening.
    public func emit(path: String, interface: String, member: String, destination: String?, strings: [String]) {
        queue.async {
            self.withConnection { connection in
                var signal: OpaquePointer?
                var result = fetchd_bus_new_signal(connection.handle, path, interface, member, destination, &signal)
                guard result >= 0, let signal else { return }
                defer { sd_bus_message_unref(signal) }
                for string in strings where result >= 0 { result = fetchd_bus_append_string(signal, string) }
                if result >= 0 { _ = fetchd_bus_send(signal) }
            }
        }
    }

    /// On the queue: sends `reply` to `call`.
    func send(_ reply: BusReply, to call: BusMessage) {
        defer { reply.discard() }
        withConnection { _ in
            if case .error(let error) = reply {
                _ = fetchd_bus_reply_error(call.rawMessage, error.name, error.message)
                return
            }
            var message: OpaquePointer?
            guard fetchd_bus_new_reply(call.rawMessage, &message) >= 0, let message else { return }
            defer { sd_bus_message_unref(message) }
            if reply.write(into: message) >= 0 {
                _ = fetchd_bus_send(message)
            } else {
                _ = fetchd_bus_reply_error(call.rawMessage, "org.freedesktop.DBus.Error.NoMemory",
                                           "fetchd could not build the reply")
            }
        }
    }

    /// Runs `body` on the server's queue.
    func onQueueAsync(_ body: @escaping @Sendable () -> Void) { queue.async(execute: body) }

    private func withConnection(_ body: (BusConnection) -> Void) {
        _ = withConnectionResult(body)
    }

    /// On the queue: `body`'s result on the open connection (nil when it is closed); whatever
    /// `body` queued is then written as the socket allows.
    func withConnectionResult<Result: Sendable>(_ body: (BusConnection) -> Result) -> Result? {
        state.withLock { state in
            guard let connection = state.connection else { return nil }
            let result = body(connection)
            watchWrites(&state, connection)
            return result
        }
    }

    private func onQueue(_ work: @escaping @Sendable () throws(BusError) -> Void) async throws(BusError) {
        let result: Result<Void, BusError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(BusError) { try work(); continuation.resume(returning: .success(())) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        try result.get()
    }

    private func connect(_ bus: BusConnection.Bus, object: Object) throws(BusError) {
        try state.withLock { state throws(BusError) in
            let connection = try BusConnection(bus)
            let context = Unmanaged.passUnretained(self).toOpaque()
            var result = fetchd_bus_add_fetchd1(connection.handle, object.path, { context, call in
                guard let context, let call else { return -EINVAL }
                let server = Unmanaged<BusServer>.fromOpaque(context).takeUnretainedValue()
                server.onCall(BusIncomingCall(message: BusMessage(retaining: call), server: server))
                return 0
            }, context, object.version, object.scope)
            guard result >= 0 else { throw BusError(operation: "publish \(object.path)", errno: result) }
            if let handlers = object.handlers {
                result = publish(handlers, on: connection)
                guard result >= 0 else { throw BusError(operation: "publish \(handlers.prefix)", errno: result) }
            }
            result = fetchd_bus_request_name(connection.handle, object.name)
            guard result >= 0 else {
                throw BusError(operation: "own the name \(object.name) on the \(bus)", errno: result)
            }
            try connection.flush()
            let reader = try SocketWatch.reading(connection.fileDescriptor, queue: queue) { [weak self] in self?.process() }
            state.connection = connection
            state.reader = reader
            reader.resume()
        }
        process()
    }

    /// On the queue: handles what has arrived; reports a closed connection once.
    private func process() {
        let failure = state.withLock { state -> BusError? in
            guard let connection = state.connection else { return nil }
            do throws(BusError) {
                try connection.processPending()
                watchWrites(&state, connection)
                return nil
            } catch {
                Self.stop(&state)
                return error
            }
        }
        if let failure { onClose(failure) }
    }

    /// Watches the socket for writing while sd-bus holds unwritten bytes (a reply larger than
    /// the socket buffer, or a bus slow to read), and stops as soon as it holds none.
    private func watchWrites(_ state: inout State, _ connection: BusConnection) {
        let pending = fetchd_bus_wants_write(connection.handle) > 0
        if pending, state.writer == nil,
           let writer = try? SocketWatch.writing(connection.fileDescriptor, queue: queue, handler: { [weak self] in self?.process() }) {
            state.writer = writer
            writer.resume()
        } else if !pending, let writer = state.writer {
            writer.cancel()
            state.writer = nil
        }
    }

    private func stopWatching() {
        state.withLock { Self.stop(&$0) }
    }

    private static func stop(_ state: inout State) {
        state.writer?.cancel()
        state.writer = nil
        state.reader?.cancel()  // closes its duplicate descriptor
        state.reader = nil
        state.connection = nil
    }
}
