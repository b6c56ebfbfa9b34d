/// A value the caller may have read already, handed to a function that needs it: `.read(value)`
/// (the value may itself be nil: nothing is stored), or `.unread` (the function reads it).
/// Spelled out instead of a double optional, whose `.some(nil)` reads as a slip.
public enum Lookup<Value: Sendable>: Sendable {
    /// Not read: the function reads it itself.
    case unread
    /// Read by the caller; nil when there is none.
    case read(Value?)

    /// The value the caller read, else what `read` reads now.
    public func value(orRead read: () throws -> Value?) rethrows -> Value? {
        switch self {
        case .unread: try read()
        case .read(let value): value
        }
    }
}
