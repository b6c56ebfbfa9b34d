import CPosixShim
import FetchdCore
import FetchdSnapshots

#if canImport(Glibc)
import Glibc
#endif

/// The folder of one run: root's, enterable but not listable by others (0711), holding the
/// program's own folder (`out`, 0700, the program's user's) where it writes `FETCHD_OUTPUT`,
/// and the checked copy fetchd is given (`copy`, root's). In the unit's private /tmp, which
/// systemd throws away with the run; removed here all the same, for runs outside a unit.
struct RunasWorkspace {
    /// The run's folder.
    let path: String

    /// The program's folder, its user's.
    var userFolder: String { path + "/out" }
    /// Where the program writes its snapshot (`FETCHD_OUTPUT`).
    var userOutput: String { userFolder + "/content" }
    /// The checked copy of what it wrote.
    var copy: String { path + "/copy" }

    /// A new workspace in `root` whose program folder belongs to `user`.
    static func make(in root: String, for user: UserAccount) throws(RunasPlan.Refusal) -> RunasWorkspace {
        var template = Array((root + "/fetchd-runas-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw RunasPlan.Refusal(description: "cannot make a folder in \(root): \(String(cString: strerror(errno)))")
        }
        let workspace = RunasWorkspace(path: String(cString: made))
        guard chmod(workspace.path, 0o711) == 0, mkdir(workspace.userFolder, 0o700) == 0,
              lchown(workspace.userFolder, user.uid, user.gid) == 0 else {
            let why = String(cString: strerror(errno))
            remove(workspace, user: user)
            throw RunasPlan.Refusal(description: "cannot give \(user.name) a folder in \(workspace.path): \(why)")
        }
        return workspace
    }

    /// Removes `workspace`: what the program left in its folder with the program user's
    /// file-system rights (setfsuid: root's unlinks must not follow anything that user placed),
    /// then the rest as root.
    static func remove(_ workspace: RunasWorkspace?, user: UserAccount) {
        guard let workspace else { return }
        let remover = TreeRemover()
        // As the user, the folder is emptied (its own rmdir, in root's folder, is refused); as
        // root, the empty folder and the rest go.
        _ = fetchd_set_filesystem_ids(user.uid, user.gid)
        remover.remove(workspace.userFolder) { _ in }
        _ = fetchd_set_filesystem_ids(0, 0)
        remover.remove(workspace.path) { _ in }
    }
}
