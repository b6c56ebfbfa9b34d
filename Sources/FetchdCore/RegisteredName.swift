/// The name of a handler an application registered over D-Bus: the application's own name for
/// it and the uid that registered it. Each uid has a namespace of its own, so the daemon names
/// the handler `NAME@UID` (`news@1000`) in `fetchctl status`, the journal and the state
/// database. `@` is not allowed in names of handler files, so such a name never collides with
/// a configured handler, nor with another uid's.
public struct RegisteredName: Hashable, Sendable, CustomStringConvertible {
    /// The name the application chose (a valid handler name).
    public let base: String
    /// The uid that registered it.
    public let uid: UInt32

    /// The name `base` of `uid`; nil when `base` is not a valid handler name.
    public init?(base: String, uid: UInt32) {
        guard HandlerName.isValid(base) else { return nil }
        self.base = base
        self.uid = uid
    }

    /// Reads `NAME@UID`; nil for any other name (a configured handler's, say).
    public init?(qualified: String) {
        // Bytes, not characters: every snapshot path of every handler asks this.
        guard let at = qualified.utf8.lastIndex(of: UInt8(ascii: "@")) else { return nil }
        let digits = qualified[qualified.index(after: at)...]
        // Plain decimal only: "+1", " 1" or "01" would give one uid two names.
        guard !digits.isEmpty, digits.count <= 10, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              digits == "0" || !digits.hasPrefix("0"), let uid = UInt32(digits) else { return nil }
        self.init(base: String(qualified[..<at]), uid: uid)
    }

    /// `NAME@UID`.
    public var qualified: String { "\(base)@\(uid)" }

    /// `NAME@UID`.
    public var description: String { qualified }
}
