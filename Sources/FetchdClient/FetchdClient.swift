import FetchdSystemd

#if canImport(Glibc)
import Glibc
#endif

/// An application's connection to fetchd's D-Bus API (`org.fetchd.Fetchd1`, fetchd-dbus(7)):
/// register handlers, report uses, ask for fetches, receive `FetchCompleted`, and read content
/// through the descriptor fetchd passes.
///
/// The caller runs no loop: the connection is processed on a queue of its own whenever its
/// socket is readable (`BusListener`), and calls wait for their reply there, one at a time,
/// without holding a thread of Swift's pool. Closed by `close()` or when the last reference
/// goes.
///
/// ```swift
/// let fetchd = try await FetchdClient(.session)
/// _ = try await fetchd.register("news", options: ["kind": .string("http"), "url": .string(url)])
/// let done = try await fetchd.fetch("news", timeout: .seconds(30))
/// if done.hasNewData { let content = try await fetchd.openSnapshot("news").read() }
/// ```
public final class FetchdClient: Sendable {
    /// The bus fetchd offers its API on: `.session` (`.user`) when it runs under the user's
    /// service manager, `.system` otherwise, or an address.
    public typealias Bus = BusConnection.Bus
    /// A value of an `a{sv}`: a handler option as `register` sends it (a key's TOML type:
    /// `.string`, `.bool`, `.integer`, `.double`, `.strings`, `.stringMap` for `headers`), or
    /// an entry of `handler(_:)`'s status.
    public typealias Value = BusOption

    /// The bus name, the interface's name, and the object's path: version 1 of the API.
    public static let busName = Fetchd1Names.busName
    /// The interface.
    public static let interface = Fetchd1Names.interface
    /// The object.
    public static let path = Fetchd1Names.path

    /// How long a call waits for fetchd's reply: D-Bus's usual 25 s, which leaves time for fetchd
    /// to be started by D-Bus activation on the first call.
    public static let callTimeoutSeconds = 25.0

    private let listener: BusListener
    private let feed: CompletionFeed

    /// Connects to `bus`. Nothing is asked of fetchd yet: a first call starts it if it is not
    /// running (D-Bus activation).
    public init(_ bus: Bus = .session) async throws(FetchdError) {
        let feed = CompletionFeed()
        let rule = BusMatchRule(sender: Self.busName, path: Self.path, interface: Self.interface, member: "FetchCompleted")
        do {
            listener = try await BusListener.open(
                bus, label: "fetchd-client", callTimeoutSeconds: Self.callTimeoutSeconds,
                setup: { connection throws(BusError) in try connection.addMatch(rule) { feed.deliver($0) } },
                onClose: { _ in feed.finish() })
        } catch {
            throw FetchdError(error, otherwise: FetchdError.Name.noServer)
        }
        self.feed = feed
    }

    deinit { close() }

    /// Closes the connection; every stream of `completions()` ends. Calls made afterwards fail
    /// with `Disconnected`.
    public func close() {
        listener.close()
        feed.finish()
    }

    /// Registers the caller's handler `name`, or replaces it, with `options`: the keys of a
    /// handler file's `[[handler]]` table (fetchd.toml(5)), at least `kind` ("http" or
    /// "transfer") and `url`. Returns the name fetchd knows it by, `NAME@UID`.
    @discardableResult
    public func register(_ name: String, options: [String: Value]) async throws(FetchdError) -> String {
        var entries: [BusEntry] = []
        for (key, option) in options.sorted(by: { $0.key < $1.key }) {
            guard let value = BusEntry.Value(option) else {
                throw FetchdError(name: FetchdError.Name.invalidArguments,
                                  message: "\(key): \(option) cannot be sent; use a string, boolean, number, [String] or [String: String]")
            }
            entries.append(BusEntry(key, value))
        }
        return try await call("RegisterHandler", [.string(name), .dictionary(entries)]) { reply throws(BusError) in
            try reply.readString()
        }
    }

    /// Forgets the handler and removes its snapshots.
    public func unregister(_ name: String) async throws(FetchdError) {
        try await call("UnregisterHandler", [.string(name)]) { _ throws(BusError) in }
    }

    /// The names of the caller's handlers, as it registered them.
    public func handlers() async throws(FetchdError) -> [String] {
        try await call("ListHandlers", []) { reply throws(BusError) in try reply.readStrings() }
    }

    /// The handler's status (`GetHandler`): `kind`, `enabled`, `running`, `last_result`, ...;
    /// times in microseconds since 1970 as `.unsigned`. Keys without a value are left out.
    public func handler(_ name: String) async throws(FetchdError) -> [String: Value] {
        try await call("GetHandler", [.string(name)]) { reply throws(BusError) in try reply.readOptions() }
    }

    /// Tells fetchd the user opened the application: one use, which its planner learns from.
    public func reportUse(_ name: String) async throws(FetchdError) {
        try await call("ReportUse", [.string(name)]) { _ throws(BusError) in }
    }

    /// Starts a fetch and returns at once; its result comes as a `FetchCompleted` (see
    /// `completions()`, or `fetch(_:timeout:)`, which waits for it).
    public func fetchNow(_ name: String) async throws(FetchdError) {
        try await call("FetchNow", [.string(name), .dictionary([])]) { _ throws(BusError) in }
    }

    /// The handler's newest content and its metadata; the snapshot owns the descriptor.
    public func openSnapshot(_ name: String) async throws(FetchdError) -> Snapshot {
        let (fd, entries) = try await call("OpenSnapshot", [.string(name), .dictionary([])]) {
            reply throws(BusError) -> (Int32, [String: BusOption]) in
            let fd = try reply.readFileDescriptor()
            do throws(BusError) { return (fd, try reply.readOptions()) } catch {
                Self.closeDescriptor(fd)
                throw error
            }
        }
        do throws(FetchdError) {
            return Snapshot(fileDescriptor: fd, metadata: try Snapshot.Metadata(entries))
        } catch {
            Self.closeDescriptor(fd)
            throw error
        }
    }

    /// Every `FetchCompleted` of the caller's handlers from now on, until the connection closes.
    /// Each call is a stream of its own. fetchd sends the signal to connections that called a
    /// method, so call one (`handlers()` will do) before waiting on a stream alone.
    public func completions() -> AsyncStream<FetchCompleted> { feed.stream() }

    /// Calls `member` with `arguments` on fetchd and reads its reply on the connection's queue.
    /// `path` and `interface` default to fetchd's object and interface.
    func call<Result: Sendable>(
        _ member: String, _ arguments: [BusArgument], path: String = FetchdClient.path, interface: String = FetchdClient.interface,
        read: @escaping @Sendable (BusMessage) throws(BusError) -> Result
    ) async throws(FetchdError) -> Result {
        let feed = self.feed
        do {
            return try await listener.perform { connection throws(BusError) in
                let reply = try connection.call(destination: Self.busName, path: path, interface: interface,
                                                member: member, arguments: arguments)
                feed.answered(by: reply.sender)
                return try read(reply)
            }
        } catch {
            throw FetchdError(error, otherwise: feed.isFinished ? FetchdError.Name.disconnected : FetchdError.Name.clientFailed)
        }
    }

    private static func closeDescriptor(_ fd: Int32) { Glibc.close(fd) }
}
