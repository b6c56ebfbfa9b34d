import CSystemdShim
import Foundation

/// The objects under `prefix` that carry `org.fetchd.Fetchd1.Handler`, one per handler, as a
/// `BusServer` serves them: which exist for a caller, and their properties. Asked on the
/// server's queue while a call is processed, so answers come from memory and never wait.
public protocol BusHandlerObjects: AnyObject, Sendable {
    /// The prefix of their paths (`/org/fetchd/Fetchd1/handler`).
    var prefix: String { get }
    /// Whether `path` exists for a caller of `uid`: a caller sees only the objects it may read.
    func exists(_ path: String, forUID uid: UInt32) -> Bool
    /// The value of `property` of the object at `path`, nil when there is none.
    func value(of property: String, at path: String) -> BusEntry.Value?
}

/// Object paths built from names that may hold any character.
public enum BusObjectPath {
    /// `prefix/ID` with `id` escaped as sd-bus and systemd escape unit names (`news@1000` is
    /// `news_401000`), or nil when `prefix` is not an object path.
    public static func encode(prefix: String, id: String) -> String? {
        var path: UnsafeMutablePointer<CChar>?
        guard sd_bus_path_encode(prefix, id, &path) >= 0, let path else { return nil }
        defer { free(path) }
        return String(cString: path)
    }
}

extension BusServer {
    /// On the queue, at connection: publishes `objects` on `connection`.
    func publish(_ objects: any BusHandlerObjects, on connection: BusConnection) -> Int32 {
        let context = Unmanaged.passUnretained(self).toOpaque()
        return fetchd_bus_add_handler_objects(connection.handle, objects.prefix, { context, path, uid in
            guard let context, let path, let objects = Unmanaged<BusServer>.fromOpaque(context).takeUnretainedValue().handlerObjects
            else { return 0 }
            return objects.exists(String(cString: path), forUID: uid) ? 1 : 0
        }, { context, path, property, reply in
            guard let context, let path, let property, let reply,
                  let objects = Unmanaged<BusServer>.fromOpaque(context).takeUnretainedValue().handlerObjects,
                  let value = objects.value(of: String(cString: property), at: String(cString: path))
            else { return -ENOENT }
            return switch value {
            case .string(let text): fetchd_bus_append_string(reply, text)
            case .bool(let flag): fetchd_bus_append_bool(reply, flag ? 1 : 0)
            case .uint64(let number): fetchd_bus_append_uint64(reply, number)
            case .int64, .strings, .double, .stringMap: -EINVAL
            }
        }, context)
    }

    /// Sends `PropertiesChanged` of `interface` at `path` with `changed`, to `destination` alone.
    public func emitPropertiesChanged(path: String, interface: String, destination: String, changed: [BusEntry]) {
        onQueueAsync {
            _ = self.withConnectionResult { connection -> Int32 in
                var signal: OpaquePointer?
                var result = fetchd_bus_new_properties_changed(connection.handle, path, interface, destination, &signal)
                guard result >= 0, let signal else { return result }
                defer { sd_bus_message_unref(signal) }
                result = BusReply.write(changed, into: signal)
                if result >= 0 { result = fetchd_bus_finish_properties_changed(signal) }
                return result >= 0 ? fetchd_bus_send(signal) : result
            }
        }
    }
}
