import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Watches a child without reaping it (`ProgramRun` reaps it after the run, to read its status).
enum ProcessGroupReaper {
    /// How often the child is checked; short enough that leftovers die promptly.
    static let pollInterval: Duration = .milliseconds(20)

    /// Returns once `pid` has exited (it stays a zombie for its owner to reap). Cancellation
    /// is ignored on purpose: the caller must learn of the exit to clean up the group.
    static func waitForExit(of pid: pid_t) async {
        while true {
            var info = siginfo_t()
            let rc = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT | WNOHANG)
            // rc < 0 means there is no such child any more (already reaped): it has exited.
            if rc < 0 || info._sifields._sigchld.si_pid == pid { return }
            await sleepIgnoringCancellation(pollInterval)
        }
    }

    /// A sleep that completes even if the task is cancelled (Task.sleep would return at once).
    static func sleepIgnoringCancellation(_ duration: Duration) async {
        let nanoseconds = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
                continuation.resume()
            }
        }
    }
}
