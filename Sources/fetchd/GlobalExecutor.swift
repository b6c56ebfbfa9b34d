import CPosixShim
import NIOCore
import NIOPosix

/// Swift concurrency's global executor, moved onto NIO's singleton event loops (why: see
/// `FetchdMain`).
enum GlobalExecutor {
    /// What the runtime calls for each job it would give its default global executor.
    private typealias EnqueueHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs NIO's loops as the global executor. NIO's own installer finds the runtime's
    /// hook with dlsym, which cannot see a statically linked runtime (the installed and packaged
    /// build); then the hook is set through a reference the linker resolved, to the same effect:
    /// each job runs on one of the loops, the current one when the enqueuing thread is a loop.
    /// Returns false when neither could set it. Call once, from the main thread, before any task.
    static func installNIOLoops() -> Bool {
        if NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() { return true }
        // The hook's type is the runtime's, not a public API: only for the compilers NIO's own
        // installer supports it for.
        #if compiler(<6.6) && os(Linux)
        let hook: EnqueueHook = { job, _ in
            MultiThreadedEventLoopGroup.singleton.any().executor.enqueue(ExecutorJob(job))
        }
        // A thin function is one code pointer, which is what the runtime stores.
        return fetchd_install_enqueue_global_hook(unsafeBitCast(hook, to: UnsafeMutableRawPointer.self))
        #else
        return false
        #endif
    }
}
