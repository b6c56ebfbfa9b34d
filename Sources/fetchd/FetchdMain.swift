import Dispatch
import Glibc
import NIOCore
import NIOPosix

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
@main
enum FetchdMain {
    static func main() {
        if !NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() {
            // Only on a runtime without the hook: everything still works, idle costs wake-ups.
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
