import FetchdCore
import Foundation

extension StateStore {
    /// The database holds when the user used what: readable by fetchd alone, and by the state
    /// folder's group when that folder is open to it (the system unit's 0750 folder: members of
    /// the fetchd group replay it with `fetchctl simulate --from-state`), whatever the umask. A
    /// new file is created so before SQLite opens it (its journal files take the main file's
    /// mode); an older one open to more is narrowed, with its journal files.
    static func keepPrivate(_ path: String) {
        var folder = stat()
        let groupMayRead = stat(PathName.directory(of: path), &folder) == 0 && folder.st_mode & 0o050 == 0o050
        let allowed: mode_t = groupMayRead ? 0o640 : 0o600
        let created = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, allowed)
        if created >= 0 {
            fchmod(created, allowed)  // exactly this mode, whatever the umask
            Glibc.close(created)  // qualified: StateStore has a close() of its own
            return
        }
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            if stat(file, &info) == 0, info.st_mode & 0o077 & ~allowed != 0, info.st_uid == geteuid() {
                _ = chmod(file, info.st_mode & (0o700 | allowed))
            }
        }
    }
}
