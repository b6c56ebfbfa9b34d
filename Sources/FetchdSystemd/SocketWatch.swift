import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Dispatch sources on a bus connection's socket, for `BusListener` and `BusServer`. Each
/// watches a duplicate of the socket, closed by its own cancel handler: the connection may then
/// be freed (closing its own descriptor) at any moment, and the number cannot be reused for
/// another socket while dispatch still watches it.
enum SocketWatch {
    /// A read source on a duplicate of `descriptor`, resumed by the caller.
    static func reading(_ descriptor: Int32, queue: DispatchQueue,
                        handler: @escaping @Sendable () -> Void) throws(BusError) -> any DispatchSourceRead {
        let duplicate = try duplicated(descriptor)
        let source = DispatchSource.makeReadSource(fileDescriptor: duplicate, queue: queue)
        source.setEventHandler(handler: handler)
        source.setCancelHandler { Glibc.close(duplicate) }
        return source
    }

    /// A write source on a duplicate of `descriptor`, resumed by the caller.
    static func writing(_ descriptor: Int32, queue: DispatchQueue,
                        handler: @escaping @Sendable () -> Void) throws(BusError) -> any DispatchSourceWrite {
        let duplicate = try duplicated(descriptor)
        let source = DispatchSource.makeWriteSource(fileDescriptor: duplicate, queue: queue)
        source.setEventHandler(handler: handler)
        source.setCancelHandler { Glibc.close(duplicate) }
        return source
    }

    private static func duplicated(_ descriptor: Int32) throws(BusError) -> Int32 {
        let duplicate = dup(descriptor)
        guard duplicate >= 0 else { throw BusError(operation: "watch the bus socket", errno: -errno) }
        return duplicate
    }
}
