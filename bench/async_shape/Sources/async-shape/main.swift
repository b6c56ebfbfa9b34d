// What fetchd's per-fetch async shape costs with no work inside it, on libdispatch's executor
// and on NIO's (the one fetchd runs on, so that an idle daemon sleeps): a wake of N items in a
// window of 72 tasks (fetchd's default window); each item hops onto an actor, off it again
// (`@concurrent`), awaits a continuation resumed by a driver thread (libcurl's, in fetchd), then
// one resumed by a batching serial queue (the commit queue), and hops back onto the actor.
// Prints the CPU time per item of each round; `make bench-async-shape` runs both executors.
//
//     async-shape [ITEMS] [nio]
import Dispatch
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Stands in for libcurl's driver thread: resumes what is submitted, in batches.
final class Driver: @unchecked Sendable {
    private let condition = NSCondition()
    private var inbox: [CheckedContinuation<Int, Never>] = []

    init() {
        Thread { [self] in
            while true {
                condition.lock()
                while inbox.isEmpty { condition.wait() }
                let batch = inbox
                inbox = []
                condition.unlock()
                for continuation in batch { continuation.resume(returning: 1) }
            }
        }.start()
    }

    func submit(_ continuation: CheckedContinuation<Int, Never>) {
        condition.lock()
        inbox.append(continuation)
        condition.signal()
        condition.unlock()
    }
}

/// Stands in for the commit queue: a serial queue that resumes every waiting item at once.
final class Committer: Sendable {
    private let queue = DispatchQueue(label: "commit")
    private let pending = Mutex<[CheckedContinuation<Int, Never>]>([])

    func commit() async -> Int {
        await withCheckedContinuation { continuation in
            let first = pending.withLock { waiting in
                waiting.append(continuation)
                return waiting.count == 1
            }
            guard first else { return }
            queue.async {
                for waiting in self.pending.withLock({ waiting in defer { waiting = [] }; return waiting }) {
                    waiting.resume(returning: 2)
                }
            }
        }
    }
}

/// Stands in for the coordinator: per-item bookkeeping on the actor before and after.
actor Coordinator {
    private var running: [Int: Bool] = [:]
    private let driver = Driver()
    private let committer = Committer()

    func fetch(_ item: Int) async -> Int {
        running[item] = true
        let result = await pipeline()
        running[item] = nil
        return result
    }

    @concurrent nonisolated func pipeline() async -> Int {
        let transferred = await withCheckedContinuation { driver.submit($0) }
        return transferred + (await committer.commit())
    }
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

let arguments = CommandLine.arguments.dropFirst()
let items = arguments.first.flatMap { Int($0) } ?? 20_000
let onNIO = arguments.contains("nio")
if onNIO && !NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() {
    print("NIO's executor could not be installed")
    exit(1)
}
let width = 72
let coordinator = Coordinator()
for round in 1...5 {
    let start = cpuSeconds()
    let total = await withTaskGroup(of: Int.self) { group in
        var next = 0
        while next < min(width, items) {
            let item = next
            group.addTask { await coordinator.fetch(item) }
            next += 1
        }
        var total = 0
        for await result in group {
            total += result
            if next < items {
                let item = next
                group.addTask { await coordinator.fetch(item) }
                next += 1
            }
        }
        return total
    }
    precondition(total == 3 * items)
    let perItem = (cpuSeconds() - start) / Double(items) * 1e6
    print("executor \(onNIO ? "nio" : "dispatch") round \(round): \(items) items, CPU \(String(format: "%.1f", perItem)) us per item")
}
exit(0)
