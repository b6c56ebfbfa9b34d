import Dispatch
import Glibc

/// The process's entry point: runs Swift concurrency on NIO's event-loop threads, then
/// `FetchdCommand`.
///
/// Why not the default executor: on Linux it is libdispatch's global queues, and the first
/// worker thread of those starts libdispatch's thread-pool monitor, a one-second timer that is
/// never cancelled, so an idle daemon would wake sixty times a minute for nothing. NIO's loops
/// block in `epoll_wait` until there is work. fetchd's own threads and serial dispatch queues
/// (overcommit queues, which the monitor does not watch) are unaffected.
///
/// `Task.sleep` would still go through a libdispatch timer on those global queues; fetchd's
/// waits use `DeadlineTimer` instead (see `DeadlineTimer.sleep(for:)`).
///
/// What changes with it: NIO runs a job enqueued from one of its loops on that same loop, so
/// tasks started by a task tend to stay on its thread, while resumptions from fetchd's own
/// threads (the HTTP driver, the commit queue, the deadline timer) spread over the loops. The
/// loops also carry the control socket and the push listener, so the coordinator's synchronous
/// SQLite calls delay their I/O as long as they take, as they delayed other tasks before. A
/// wake of 1,000 fetches costs the same CPU as on libdispatch's pool (bench/README.md).
@main
enum FetchdMain {
    /// Installs the executor, starts the command in a task and parks the main thread.
    static func main() {
        if !GlobalExecutor.installNIOLoops() {
            // A toolchain or runtime NIO has no hook for: everything still works, idle costs
            // wake-ups. (The logger is not set up yet: said on stderr, the journal under systemd.)
            let note = "fetchd: Swift concurrency stays on libdispatch's executor: expect a wake-up a second while idle\n"
            _ = note.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        }
        // Detached: the command needs no main actor, and nothing else waits behind it.
        Task.detached {
            await FetchdCommand.main()
            exit(0)
        }
        // Parks the main thread as an async `main` would (in sigsuspend); the main queue then
        // runs on an overcommit thread, which the monitor does not watch either.
        dispatchMain()
    }
}
