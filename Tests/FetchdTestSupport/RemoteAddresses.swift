/// Addresses tests put on the `lo` of a network namespace they make themselves, as "remote"
/// servers: global for fetchd's address classes (the documentation ranges, 203.0.113/24 and
/// its kin, are special-purpose and refused like private ones), and never routed anywhere,
/// since the namespace has no other interface.
public enum RemoteAddresses {
    /// The first remote server's address.
    public static let first = "11.0.0.7"
    /// A second one.
    public static let second = "11.0.0.8"
    /// A third, for a server that must not answer.
    public static let unreachable = "11.0.0.9"
}
