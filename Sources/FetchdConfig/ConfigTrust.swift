import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Who may write the configuration. fetchd runs the programs its handler files name, so a
/// config file or handler folder someone else can write lets them run programs as fetchd, as
/// root when fetchd runs as root. As sshd's StrictModes: each must be owned by root or by
/// fetchd's own user and not writable by others, and under root not by its group either. A
/// file that fails this is a bad configuration: fetchd does not start (exit 78), and a reload
/// keeps the previous configuration.
enum ConfigTrust {
    /// Why fetchd may not trust `path` (a config file or the handler folder), nil when it may or
    /// when `path` does not exist (its absence is reported elsewhere, or means "no handlers").
    static func problem(at path: String, euid: uid_t = geteuid()) -> ConfigDiagnostic? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let mode = String(info.st_mode & 0o7777, radix: 8)
        let runsAs = euid == 0 ? "root" : "fetchd's user (uid \(euid))"
        if info.st_uid != 0 && info.st_uid != euid {
            return ConfigDiagnostic(file: path, line: nil, key: nil, message:
                "owned by uid \(info.st_uid), not by root or \(runsAs): its owner could make fetchd run any program; "
                    + "chown root \(path)")
        }
        let groupWritable = info.st_mode & S_IWGRP != 0, othersWritable = info.st_mode & S_IWOTH != 0
        if othersWritable || (euid == 0 && groupWritable) {
            let who = othersWritable ? "every user" : "its group"
            return ConfigDiagnostic(file: path, line: nil, key: nil, message:
                "writable by \(who) (mode \(mode)) while fetchd runs as \(runsAs): they could make it run any program; "
                    + "chmod go-w \(path)")
        }
        return nil
    }
}
