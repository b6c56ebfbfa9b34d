#if canImport(Glibc)
import Glibc
#endif

/// A local user account, looked up by name in the system's user database (NSS: `/etc/passwd`,
/// systemd's userdb...): who an exec handler with `user = "NAME"` runs as.
public struct UserAccount: Sendable, Equatable {
    /// The login name.
    public let name: String
    /// The user's ID.
    public let uid: UInt32
    /// The user's primary group.
    public let gid: UInt32
    /// Every group the user belongs to (the primary one first), as `initgroups` would give them:
    /// a program started as this user gets these and no others (not fetchd's).
    public let groups: [UInt32]
    /// The user's home directory (`HOME` of its programs).
    public let home: String

    /// Creates an account from known values (tests).
    public init(name: String, uid: UInt32, gid: UInt32, groups: [UInt32], home: String) {
        self.name = name
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.home = home
    }

    /// The account named `name`, or nil when the system has none.
    public static func named(_ name: String) -> UserAccount? {
        guard !name.isEmpty else { return nil }
        return lookUp { getpwnam_r(name, &$0, $1, $2, &$3) }
    }

    /// The account whose ID is `uid`, or nil when the system has none.
    public static func withID(_ uid: UInt32) -> UserAccount? {
        lookUp { getpwuid_r(uid, &$0, $1, $2, &$3) }
    }

    /// Runs a `getpw*_r` call and copies its entry out. The reentrant calls, not `getpwnam`:
    /// configs are loaded and control connections checked on several threads at once.
    private static func lookUp(
        _ call: (inout passwd, UnsafeMutablePointer<CChar>, Int, inout UnsafeMutablePointer<passwd>?) -> Int32
    ) -> UserAccount? {
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        return buffer.withUnsafeMutableBufferPointer { storage -> UserAccount? in
            // The entry's strings live in `storage`: copy them out inside this closure.
            var entry = passwd()
            var found: UnsafeMutablePointer<passwd>?
            guard let base = storage.baseAddress, call(&entry, base, storage.count, &found) == 0, found != nil,
                  let namePointer = entry.pw_name else {
                return nil
            }
            let name = String(cString: namePointer)
            let home = entry.pw_dir.map { String(cString: $0) } ?? ""
            return UserAccount(name: name, uid: entry.pw_uid, gid: entry.pw_gid,
                               groups: groupList(of: name, primary: entry.pw_gid), home: home.isEmpty ? "/" : home)
        }
    }

    /// The groups of `name`; just `primary` when the database cannot say.
    private static func groupList(of name: String, primary: gid_t) -> [UInt32] {
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, primary, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(name, primary, &groups, &count) >= 0 else { return [primary] }
        }
        return Array(groups.prefix(Int(count)))
    }
}
