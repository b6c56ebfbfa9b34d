import CPosixShim
import FetchdCore
import FetchdSnapshots
import Foundation

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
    /// The copy of the handler's newest snapshot the program is given (`FETCHD_PREVIOUS`).
    var previous: String { path + "/previous" }

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
    /// file-system rights (setfsuid: root's unlinks must not follow anything that user placed;
    /// the user can neither list nor change the run's folder, only its own), then the rest as
    /// root. What cannot be removed is logged (the journal, from stderr).
    static func remove(_ workspace: RunasWorkspace?, user: UserAccount) {
        guard let workspace else { return }
        let remover = TreeRemover()
        let report: (TreeRemover.Failure) -> Void = {
            FileHandle.standardError.write(Data("fetchd-runas: \($0)\n".utf8))
        }
        _ = fetchd_set_filesystem_ids(user.uid, user.gid)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: workspace.userFolder)) ?? []
        for entry in entries { remover.remove(workspace.userFolder + "/" + entry, reporting: report) }
        _ = fetchd_set_filesystem_ids(0, 0)
        remover.remove(workspace.path, reporting: report)
    }
}
