#if canImport(Glibc)
import Glibc
#endif
import FetchdControl
import FetchdCore

/// Who may use the control socket: root, the daemon's own user, and members of an optional
/// group. The socket's file mode is the first gate; this is the second, so a socket made
/// world-accessible by mistake still refuses strangers.
public struct PeerPolicy: Sendable {
    /// The daemon's effective user id.
    public var daemonUID: UInt32
    /// The group whose members are allowed, if any.
    public var allowedGroupID: UInt32?

    /// Creates a policy for `groupName` (nil: no extra group). Fails when the group does not exist.
    public init(daemonUID: UInt32 = geteuid(), groupName: String?) throws(ControlError) {
        self.daemonUID = daemonUID
        if let groupName {
            guard let group = getgrnam(groupName) else {
                throw ControlError(code: .internalError,
                                   message: "control_group \"\(groupName)\" does not exist; create it (groupadd \(groupName)) or unset control_group")
            }
            allowedGroupID = group.pointee.gr_gid
        }
    }

    /// Creates a policy for the group `groupID` (nil: no extra group).
    public init(daemonUID: UInt32 = geteuid(), groupID: UInt32?) {
        self.daemonUID = daemonUID
        allowedGroupID = groupID
    }

    /// Nil when `peer` may connect, otherwise the reason it may not.
    public func refusal(for peer: PeerCredentials) -> String? {
        if peer.uid == 0 || peer.uid == daemonUID { return nil }
        if let allowedGroupID, Self.isMember(uid: peer.uid, primaryGID: peer.gid, of: allowedGroupID) { return nil }
        guard let allowedGroupID else {
            return "uid \(peer.uid) may not use the fetchd control socket: only root, the daemon's user and members of "
                + "control_group may, and fetchd.toml sets no control_group. \(ControlAccess.operatorRecipe)"
        }
        let group = Self.groupName(allowedGroupID)
        return "uid \(peer.uid) may not use the fetchd control socket: only root, the daemon's user and members of "
            + "control_group \"\(group)\" may; to let this user in: usermod -aG \(group) USER, then log in again"
    }

    /// The group's name, or its number when it has none.
    private static func groupName(_ gid: UInt32) -> String {
        guard let entry = getgrgid(gid), let name = entry.pointee.gr_name else { return "\(gid)" }
        return String(cString: name)
    }

    /// Whether `uid` is root, the daemon's user or a member of the group, its groups read from
    /// the user database (a D-Bus caller, whose credentials carry no group).
    public func admits(uid: UInt32) -> Bool {
        if uid == 0 || uid == daemonUID { return true }
        guard let allowedGroupID else { return false }
        return Self.isMember(uid: uid, primaryGID: nil, of: allowedGroupID)
    }

    private static func isMember(uid: UInt32, primaryGID: UInt32?, of group: UInt32) -> Bool {
        if primaryGID == group { return true }
        guard let account = UserAccount.withID(uid) else { return false }
        return account.gid == group || account.groups.contains(group)
    }
}
