import FetchdConfig
import FetchdControl
import FetchdControlServer
import FetchdCore
import FetchdSystemd
import Foundation
import Synchronization

/// The `org.fetchd.Fetchd1.Handler` objects, one per registered handler (fetchd-dbus(7),
/// HANDLER OBJECTS): their properties are the handler's status as `GetHandler` gives it, kept
/// in memory (the bus asks for them on its queue, which must not wait) and refreshed when a
/// fetch of it ends or the registrations change. Only its uid, root and `control_group` see
/// an object; the others are told it does not exist.
final class HandlerObjects: BusHandlerObjects {
    /// Where the objects live.
    static let pathPrefix = Fetchd1Names.handlerPathPrefix
    /// The interface they carry.
    static let interface = Fetchd1Names.handlerInterface

    private struct Object {
        var uid: UInt32
        var properties: [String: BusEntry.Value]
    }

    private struct State {
        var objects: [String: Object] = [:]
        var controlGroupID: UInt32?
    }

    private let state = Mutex(State())

    /// No objects yet.
    init() {}

    var prefix: String { Self.pathPrefix }

    /// The object path of `name`: its qualified name escaped (`news@1000` is `news_401000`).
    static func path(of name: RegisteredName) -> String {
        BusObjectPath.encode(prefix: pathPrefix, id: name.qualified) ?? pathPrefix + "/_"
    }

    func exists(_ path: String, forUID uid: UInt32) -> Bool {
        let (owner, group) = state.withLock { ($0.objects[path]?.uid, $0.controlGroupID) }
        guard let owner else { return false }
        return owner == uid || PeerPolicy(daemonUID: 0, groupID: group).admits(uid: uid)
    }

    func value(of property: String, at path: String) -> BusEntry.Value? {
        state.withLock { $0.objects[path]?.properties[property] }
    }

    /// Sets the properties of `name` from its status and newest version; returns the ones that
    /// changed (none for an object new here: nobody can have read it yet).
    func update(_ name: RegisteredName, status: HandlerStatus, version: String?) -> [BusEntry] {
        let properties = Self.properties(of: status, name: name, version: version)
        return state.withLock { state in
            let path = Self.path(of: name)
            let old = state.objects[path]?.properties
            state.objects[path] = Object(uid: name.uid, properties: properties)
            guard let old else { return [] }
            return properties.keys.sorted().compactMap { key in
                old[key] == properties[key] ? nil : properties[key].map { BusEntry(key, $0) }
            }
        }
    }

    /// Keeps the objects of `names` only, and who else sees them.
    func keep(only names: [RegisteredName], controlGroupID: UInt32?) {
        let paths = Set(names.map(Self.path(of:)))
        state.withLock { state in
            state.objects = state.objects.filter { paths.contains($0.key) }
            state.controlGroupID = controlGroupID
        }
    }

    /// The properties of the interface, in its types: times in microseconds since 1970, 0 when
    /// unknown; strings empty when unknown.
    static func properties(of status: HandlerStatus, name: RegisteredName, version: String?) -> [String: BusEntry.Value] {
        [
            "Name": .string(name.base),
            "Kind": .string(status.kind),
            "LastResult": .string(status.lastResult ?? ""),
            "LastReason": .string(status.lastReason ?? ""),
            "LastAttemptAt": .uint64(status.lastAttemptAt.map(BusMethods.microseconds) ?? 0),
            "LastSuccessAt": .uint64(status.lastSuccessAt.map(BusMethods.microseconds) ?? 0),
            "NextEligibleAt": .uint64(status.nextEligibleAt.map(BusMethods.microseconds) ?? 0),
            "ConsecutiveFailures": .uint64(UInt64(max(0, status.consecutiveFailures))),
            "Version": .string(version ?? ""),
        ]
    }
}
