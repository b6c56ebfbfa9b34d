/// A D-Bus match rule for signals (`type='signal',sender='...',path_namespace='...'`), built from
/// typed fields so that no caller writes rule syntax by hand.
///
/// `sd_bus_match_signal` would take sender, path, interface and member, but not `path_namespace`
/// (logind's session objects are `/org/freedesktop/login1/session/<id>`) nor `argN` (which
/// keeps `PropertiesChanged` of other interfaces and `NameOwnerChanged` of other names off the
/// connection), so rules are written out and installed with `sd_bus_add_match`.
public struct BusMatchRule: Sendable, Equatable, CustomStringConvertible {
    /// Only messages from this name. The bus routes by it: a well-known name matches only while
    /// the sender is its primary owner. (sd-bus cannot check a well-known sender itself, so a
    /// signal addressed to this connection directly still arrives: check `BusMessage.sender`.)
    public var sender: String?
    /// Only messages from this object.
    public var path: String?
    /// Only messages from this object or objects below it.
    public var pathNamespace: String?
    /// Only messages of this interface.
    public var interface: String?
    /// Only this signal.
    public var member: String?
    /// Only messages whose first argument is this string.
    public var arg0: String?

    /// A signal rule; nil fields match anything.
    public init(sender: String? = nil, path: String? = nil, pathNamespace: String? = nil,
                interface: String? = nil, member: String? = nil, arg0: String? = nil) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// `PropertiesChanged` of `interface` on the objects of `sender` at or below `pathNamespace`
    /// (its first argument is the interface whose properties changed).
    public static func propertiesChanged(sender: String, pathNamespace: String, interface: String) -> BusMatchRule {
        BusMatchRule(sender: sender, pathNamespace: pathNamespace, interface: "org.freedesktop.DBus.Properties",
                     member: "PropertiesChanged", arg0: interface)
    }

    /// The rule's text, as the bus parses it.
    public var description: String {
        let fields: [(String, String?)] = [
            ("sender", sender), ("path", path), ("path_namespace", pathNamespace),
            ("interface", interface), ("member", member), ("arg0", arg0),
        ]
        return (["type='signal'"] + fields.compactMap { key, value in value.map { "\(key)=\(Self.quoted($0))" } })
            .joined(separator: ",")
    }

    /// A value in single quotes. Names and paths cannot hold a quote; one in `arg0` is written
    /// as the specification says (end the quoting, `\'`, quote again), which sd-bus refuses
    /// (EINVAL) rather than misreads, so a value can never add a field to the rule.
    static func quoted(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
