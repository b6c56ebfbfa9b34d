import FetchdSystemd

extension FetchdClient {
    /// The interface of a handler's object, whose properties are its status.
    public static let handlerInterface = Fetchd1Names.handlerInterface

    /// The path of the handler's object (`GetHandlerObject`).
    public func handlerObject(_ name: String) async throws(FetchdError) -> String {
        try await call("GetHandlerObject", [.string(name)]) { reply throws(BusError) in try reply.readObjectPath() }
    }

    /// Every property of the handler's object: `Name`, `Kind`, `LastResult`, `LastReason`,
    /// `LastAttemptAt`, `LastSuccessAt`, `NextEligibleAt`, `ConsecutiveFailures` (times in
    /// microseconds since 1970 as `.unsigned`) and `Version`. fetchd sends each change as
    /// `PropertiesChanged` to the handler's uid.
    public func properties(of name: String) async throws(FetchdError) -> [String: Value] {
        let object = try await handlerObject(name)
        return try await call("GetAll", [.string(Self.handlerInterface)], path: object, interface: "org.freedesktop.DBus.Properties") {
            reply throws(BusError) in try reply.readOptions()
        }
    }
}
