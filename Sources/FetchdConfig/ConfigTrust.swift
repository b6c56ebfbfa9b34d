import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Who may write what configuration names. fetchd runs the programs its handler files name, so
/// a config file, handler folder, program or CA file someone else can write, or one in a folder
/// someone else can write (they could rename it away and put their own in its place), lets
/// them run programs as fetchd, as root when fetchd runs as root, or vouch for any server. As
/// sshd's StrictModes (`safe_path`, and Debian's rule for group-writable files):
///
/// - each file and folder, and every folder above it up to `/`, is owned by root or by
///   fetchd's own user;
/// - none is writable by others, except a folder above that root owns with its sticky bit set
///   (as `/tmp`): there nobody may rename or remove another's entry;
/// - none is writable by its group unless that group's only member is the owner (a user
///   private group, as `umask 002` checkouts have; root's own group on Debian): a group with
///   any other member (`staff`, `users`, `adm`, one with no member at all, as setgid programs
///   use) could be joined or already holds someone else. This holds whatever user fetchd runs
///   as: a file its user owns but a shared group may write is as open as a world-writable one
///   to that group. A group-writable folder owned by root is refused on the same terms.
///
/// In a user namespace that does not map root (the user unit's `PrivateUsers=yes`), the kernel
/// shows every unmapped owner, root or another user, as the overflow uid (nobody): there an
/// owner shown so is taken as root, since it cannot be told apart, and only the modes are held
/// to the rule; the user's own files are checked in full.
///
/// A configuration that fails this does not start fetchd (exit 78), and a reload keeps the
/// previous one.
enum ConfigTrust {
    /// What is being checked: the thing configuration names, or a folder above it.
    enum Role {
        /// A config file, the handler folder, a program or a CA file.
        case named
        /// A folder above one of those, where a root-owned sticky folder may be world-writable.
        case parent
    }

    /// Why `info` (of `path`) may not be trusted, nil when it may: a phrase such as "owned by
    /// uid 65534, ...", to follow the thing's name and "is". `unmapped` is the uid an owner
    /// outside fetchd's user namespace shows as (`unmappedOwner`); `groupIsPrivate` answers
    /// whether a group has the owner as its only member (`ConfigTrust.groupIsPrivate`).
    static func problem(_ info: stat, path: @autoclosure () -> String, role: Role, euid: uid_t, unmapped: uid_t?,
                        groupIsPrivate: (gid_t, uid_t) -> Bool) -> String? {
        let mode = String(info.st_mode & 0o7777, radix: 8)
        let runsAs = euid == 0 ? "root" : "fetchd's user (uid \(euid))"
        let rootOwns = info.st_uid == 0 || info.st_uid == unmapped
        if !rootOwns && info.st_uid != euid {
            let owners = euid == 0 ? "root" : "root or \(runsAs)"
            let fix = role == .named ? "chown root \(path())"
                : "keep configuration, programs and CA files out of it, or chown root \(path())"
            return "owned by uid \(info.st_uid), not by \(owners): its owner could change what fetchd runs or trusts; \(fix)"
        }
        let isDirectory = info.st_mode & S_IFMT == S_IFDIR
        if role == .parent, isDirectory, rootOwns, info.st_mode & S_ISVTX != 0 { return nil }
        if info.st_mode & S_IWOTH != 0 {
            return "writable by every user (mode \(mode)) while fetchd runs as \(runsAs): anyone could change what "
                + "it runs or trusts; chmod go-w \(path())"
        }
        if info.st_mode & S_IWGRP != 0 && !groupIsPrivate(info.st_gid, info.st_uid) {
            return "writable by its group (gid \(info.st_gid), mode \(mode)), which has members besides the owner: "
                + "they could change what fetchd runs or trusts; chmod g-w \(path())"
        }
        return nil
    }

    /// The uid the kernel shows for owners outside fetchd's user namespace
    /// (`/proc/sys/kernel/overflowuid`), when that namespace does not map root; nil when it does
    /// (no user namespace, or one that maps root), and owners are shown as they are.
    static let unmappedOwner: uid_t? = {
        let map = (try? String(contentsOfFile: "/proc/self/uid_map", encoding: .utf8)) ?? ""
        let mapsRoot = map.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ").compactMap { UInt64($0) }
            return fields.count == 3 && fields[0] == 0 && fields[2] > 0
        }
        guard !mapsRoot else { return nil }
        let overflow = (try? String(contentsOfFile: "/proc/sys/kernel/overflowuid", encoding: .utf8)) ?? ""
        return uid_t(overflow.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 65534
    }()

    /// Whether `owner` is the only member of group `gid`: no other user has it as primary group
    /// or is listed in it, and the owner is one of the two. A group that cannot be looked up
    /// is not private.
    static func groupIsPrivate(_ gid: gid_t, owner: uid_t) -> Bool {
        guard let ownerName = userName(of: owner) else { return false }
        var group = group(), buffer = [CChar](repeating: 0, count: 16_384)
        var found: UnsafeMutablePointer<group>?
        guard getgrgid_r(gid, &group, &buffer, buffer.count, &found) == 0, found != nil else { return false }
        var members = 0
        if var member = group.gr_mem {
            while let name = member.pointee {
                guard String(cString: name) == ownerName else { return false }
                members += 1
                member += 1
            }
        }
        // Primary members are in the user database only: every entry is read.
        var entry = passwd(), entryBuffer = [CChar](repeating: 0, count: 16_384)
        var next: UnsafeMutablePointer<passwd>?
        setpwent()
        defer { endpwent() }
        while getpwent_r(&entry, &entryBuffer, entryBuffer.count, &next) == 0, next != nil {
            guard entry.pw_gid == gid else { continue }
            guard entry.pw_uid == owner else { return false }
            members += 1
        }
        return members > 0
    }

    /// The name of user `uid`, nil when it has none.
    private static func userName(of uid: uid_t) -> String? {
        var entry = passwd(), buffer = [CChar](repeating: 0, count: 16_384)
        var found: UnsafeMutablePointer<passwd>?
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil else { return nil }
        return String(cString: entry.pw_name)
    }
}
