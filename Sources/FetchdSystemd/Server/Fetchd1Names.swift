/// The names of fetchd's D-Bus API, version 1 (fetchd-dbus(7)), in one place for the daemon
/// that serves it and the `FetchdClient` library that calls it. A new major version gets new
/// names beside these, so applications written for this one keep working.
public enum Fetchd1Names {
    /// The well-known bus name.
    public static let busName = "org.fetchd.Fetchd1"
    /// The main object's interface.
    public static let interface = "org.fetchd.Fetchd1"
    /// The main object.
    public static let path = "/org/fetchd/Fetchd1"
    /// The interface of each registered handler's object.
    public static let handlerInterface = "org.fetchd.Fetchd1.Handler"
    /// Where the handlers' objects live.
    public static let handlerPathPrefix = "/org/fetchd/Fetchd1/handler"

    /// The error `org.fetchd.Fetchd1.Error.SUFFIX`.
    public static func error(_ suffix: String) -> String { "\(interface).Error.\(suffix)" }
}
