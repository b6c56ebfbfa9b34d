import FetchdClock

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
    /// On the deadline timer's thread, not a dispatch timer: the waits of a running program (its
    /// exit, its output) then cost no libdispatch timer source each.
    static func sleepIgnoringCancellation(_ duration: Duration) async {
        let deadline = ContinuousClock.now + duration
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            _ = DeadlineTimer.shared.schedule(at: deadline) { continuation.resume() }
        }
    }
}
