import FetchdConfig
import FetchdCore
import FetchdSystemd

/// A method call of fetchd's D-Bus API, read and checked on the bus's queue: what is asked,
/// by whom. Reading it never touches the daemon's state; `BusMethods` carries it out. Public for
/// the D-Bus fuzz target (FetchdFuzzing), which reads every shape of call with it.
public struct BusRequest: Sendable {
    /// What is asked.
    public enum Method: Sendable, Equatable {
        case register(name: String, options: [String: Registration.Value])
        case unregister(name: String)
        case list
        case get(name: String)
        case getObject(name: String)
        case reportUse(name: String)
        case fetchNow(name: String)
        case openSnapshot(name: String)
    }

    /// What is asked.
    public let method: Method
    /// The caller's uid, as the bus vouches for it.
    public let uid: UInt32
    /// The caller's unique connection name, which `FetchCompleted` is sent to.
    public let sender: String?
    /// Whether the caller lets polkit ask its user to authenticate.
    public let interactive: Bool

    /// Whether carrying it out changes the handlers in force.
    var changesHandlers: Bool {
        switch method {
        case .register, .unregister: true
        default: false
        }
    }

    /// Reads `call`'s arguments; throws the error to answer with when they are not usable.
    init(_ call: BusIncomingCall) throws(BusReplyError) {
        let uid: UInt32
        do throws(BusError) {
            uid = try call.senderUID()
        } catch {
            throw BusAPI.Failure.failed("fetchd could not learn who called (\(error)); try again")
        }
        try self.init(call.arguments, uid: uid)
    }

    /// Reads the call `message` from `uid` (its member, sender and arguments).
    public init(_ message: BusMessage, uid: UInt32) throws(BusReplyError) {
        let arguments = message
        let member = message.member ?? ""
        sender = message.sender
        interactive = message.allowsInteractiveAuthorization
        self.uid = uid
        let name: String
        var options: [String: BusOption] = [:]
        do throws(BusError) {
            name = member == "ListHandlers" ? "" : try arguments.readString()
            if ["RegisterHandler", "FetchNow", "OpenSnapshot"].contains(member) { options = try arguments.readOptions() }
        } catch {
            throw BusAPI.Failure.invalidArguments("the arguments of \(member) could not be read: \(error.reason)")
        }
        switch member {
        case "RegisterHandler": method = .register(name: name, options: try Self.registrationOptions(options))
        case "UnregisterHandler": method = .unregister(name: name)
        case "ListHandlers": method = .list
        case "GetHandler": method = .get(name: name)
        case "GetHandlerObject": method = .getObject(name: name)
        case "ReportUse": method = .reportUse(name: name)
        case "FetchNow":
            try Self.refuseOptions(options, of: member)
            method = .fetchNow(name: name)
        case "OpenSnapshot":
            try Self.refuseOptions(options, of: member)
            method = .openSnapshot(name: name)
        default:
            throw BusAPI.Failure.invalidArguments("fetchd has no method \"\(member)\"")
        }
    }

    /// The options of `RegisterHandler` as a handler file's values: `s`, `b`, integers, `d`,
    /// `as` and `a{ss}`, as the key's TOML type (the same checks read them).
    private static func registrationOptions(_ options: [String: BusOption]) throws(BusReplyError) -> [String: Registration.Value] {
        var values: [String: Registration.Value] = [:]
        for (key, option) in options {
            values[key] = switch option {
            case .bool(let value): .bool(value)
            case .integer(let value): .integer(value)
            case .unsigned(let value):
                if let value = Int64(exactly: value) { .integer(value) } else {
                    throw BusAPI.Failure.invalidArguments("\(key): \(value) is too large")
                }
            case .double(let value): .double(value)
            case .string(let value): .string(value)
            case .strings(let values): .strings(values)
            case .stringMap(let map): .table(map)
            case .unsupported(let signature):
                throw BusAPI.Failure.invalidArguments(
                    "\(key): a value of type \"\(signature)\" is not accepted; use s, b, x, t, d, as or a{ss} as the key's type in a handler file")
            }
        }
        return values
    }

    /// Methods whose options take no key yet: any key is refused, so a caller never believes
    /// an option it sent took effect.
    private static func refuseOptions(_ options: [String: BusOption], of method: String) throws(BusReplyError) {
        guard let key = options.keys.sorted().first else { return }
        throw BusAPI.Failure.invalidArguments("\(method) takes no option \"\(key)\" in this version")
    }
}
