import CCurlShim
import CPosixShim
import Foundation
import Synchronization

/// Runs every HTTP transfer of the process on one libcurl multi handle.
///
/// Why one thread blocked in `curl_multi_poll` rather than `multi_socket` wired into an event
/// loop: the daemon has no event loop of its own that libcurl could join (its fetches are Swift
/// tasks on the cooperative pool, which must never block), and a dedicated thread keeps libcurl's
/// single-threaded handles on one thread by construction. `curl_multi_wakeup` ends the wait when
/// a transfer is submitted or cancelled. One multi handle means one connection pool and one TLS
/// session cache, so connections and sessions are reused across fetches and across wakes, and
/// HTTP/2 streams to one host share a connection.
public final class HTTPClient: Sendable {
    /// Connection limits, applied by libcurl; transfers over them wait inside libcurl, their
    /// time limits running, and libcurl moves such a waiting transfer on only as another ends.
    /// A caller that queues its transfers itself (the daemon's slots) sets limits that never
    /// bind for what it lets through.
    public struct Limits: Sendable, Equatable {
        /// Connections open at once, to all hosts together (idle ones are closed to make room).
        public var maxConnections: Int
        /// Connections open at once to one host (host name and port); 0: no cap per host.
        public var maxHostConnections: Int

        /// Creates limits.
        public init(maxConnections: Int, maxHostConnections: Int) {
            self.maxConnections = max(1, maxConnections)
            self.maxHostConnections = max(0, maxHostConnections)
        }
    }

    /// The client used when none is given: library users and tests. The daemon makes its own,
    /// with the configured limits.
    public static let shared = HTTPClient(limits: Limits(maxConnections: 32, maxHostConnections: 6))

    /// What the caller hands to the driver thread, and what it reads back, under one lock.
    struct Inbox {
        var submitted: [Submission] = []
        var cancelled: Set<Int> = []
        var limits: Limits?
        var stopping = false
        /// The driver will read the inbox again before it sleeps: it is awake, or a wakeup was
        /// sent that it has not yet answered. Posts meanwhile need no wakeup: a wave of a
        /// thousand submissions costs one `curl_multi_wakeup` (a write to libcurl's socket
        /// pair, and a poll return), not a thousand, and the transfers a batch starts from the
        /// driver thread itself (as others end) cost none.
        var wakePending = false

        /// Whether the driver has something to read.
        var hasWork: Bool { !submitted.isEmpty || !cancelled.isEmpty || limits != nil || stopping }

        /// Marks a wakeup as sent; true when the caller must send it.
        mutating func needsWakeup() -> Bool {
            defer { wakePending = true }
            return !wakePending
        }
    }

    /// How a transfer's end reaches its caller: called once, on the driver thread (or on the
    /// caller's, when the transfer is refused before it is submitted). It must not block.
    public typealias Reply = @Sendable (Result<HTTPResponse, HTTPFailure>) -> Void

    /// One request waiting to be started by the driver.
    struct Submission {
        let id: Int
        let request: HTTPRequest
        let submittedAt: ContinuousClock.Instant
        let reply: Reply
    }

    /// The lock-guarded inbox, shared by callers and the driver thread.
    final class Mailbox: Sendable {
        let inbox: Mutex<Inbox>
        init(_ inbox: Inbox) { self.inbox = Mutex(inbox) }
    }

    private let mailbox: Mailbox
    private let nextID = Atomic<Int>(0)
    /// nil when libcurl could not be set up; every fetch then fails with the reason.
    private let multi: CurlMulti?
    private let setupFailure: HTTPFailure?

    /// Creates a client and starts its driver thread.
    public init(limits: Limits) {
        mailbox = Mailbox(Inbox(limits: limits))
        do throws(HTTPFailure) {
            let multi = try CurlMulti()
            self.multi = multi
            setupFailure = nil
            let driver = Driver(multi: multi, mailbox: mailbox)
            let thread = Thread {
                // Named from inside: Foundation's `Thread.name` does not reach the kernel on Linux, and a new
                // thread would keep its creator's name (a pool thread's `oot.default-qos`); `top -H`, perf
                // and `fetchd --once`'s per-thread CPU tell threads apart by this name.
                _ = fetchd_name_this_thread("fetchd-http")
                driver.run()
            }
            thread.start()
        } catch {
            multi = nil
            setupFailure = error
        }
    }

    deinit { shutdown() }

    /// Changes the connection limits (a reload); transfers in flight keep their connections.
    public func update(_ limits: Limits) {
        mailbox.inbox.withLock { $0.limits = limits }
        multi?.wakeup()
    }

    /// Stops the driver: transfers in flight end as `.cancelled`, later fetches fail at once.
    public func shutdown() {
        mailbox.inbox.withLock { $0.stopping = true }
        multi?.wakeup()
    }

    /// Performs `request`, writing the body to `request.outputPath`. Cancelling the calling task
    /// ends the transfer at once with `.cancelled`; so does `stopper.stop()`, from any thread.
    public func fetch(_ request: HTTPRequest, stopper: Stopper? = nil) async throws(HTTPFailure) -> HTTPResponse {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let result: Result<HTTPResponse, HTTPFailure> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Task.isCancelled under the lock: the flag is set before onCancel runs, so if it
                // is still clear here, onCancel's insert comes after this submission and the
                // driver sees both. (The inserted id alone could be drained before we get here.)
                submit(request, id: id, stopper: stopper, refusedWhenCancelled: true) {
                    continuation.resume(returning: $0)
                }
            }
        } onCancel: {
            cancel(id: id)
        }
        return try result.get()
    }

    /// Starts `request` without a task to wait in: `reply` gets its end, once, on the driver
    /// thread (at once, on this thread, when it cannot start). Returns the transfer's id, for
    /// `cancel(id:)`. A wake's batch of fetches runs this way: no task, no continuation, no
    /// executor hop per fetch.
    @discardableResult
    public func start(_ request: HTTPRequest, reply: @escaping Reply) -> Int {
        let id = nextID.add(1, ordering: .relaxed).newValue
        submit(request, id: id, stopper: nil, refusedWhenCancelled: false, reply: reply)
        return id
    }

    /// Opens the output file and posts the request to the driver, which closes the file once
    /// the transfer has ended (the driver writes to it only until then). With
    /// `refusedWhenCancelled`, a cancelled calling task is refused (looked at under the inbox's lock).
    private func submit(_ request: HTTPRequest, id: Int, stopper: Stopper?, refusedWhenCancelled: Bool,
                        reply: @escaping Reply) {
        guard let multi else { return reply(.failure(setupFailure ?? .cancelled)) }
        var request = request
        do throws(HTTPFailure) {
            request.outputDescriptor = try CurlEasy.openOutput(of: request)
        } catch {
            return reply(.failure(error))
        }
        let descriptor = request.outputDescriptor
        let closing: Reply = { result in
            close(descriptor)
            reply(result)
        }
        let post = {
            self.mailbox.inbox.withLock { inbox -> (HTTPFailure?, Bool) in
                if inbox.stopping || (refusedWhenCancelled && Task.isCancelled) { return (.cancelled, false) }
                inbox.submitted.append(Submission(id: id, request: request, submittedAt: .now, reply: closing))
                return (nil, inbox.needsWakeup())
            }
        }
        let (refused, wake) = stopper.map { $0.attach(client: self, id: id, post) ?? (.cancelled, false) } ?? post()
        if let refused { closing(.failure(refused)) } else if wake { multi.wakeup() }
    }

    /// Asks the driver to end transfer `id` (ignored when it has already ended): it ends with
    /// `.cancelled`.
    public func cancel(id: Int) {
        let wake = mailbox.inbox.withLock { inbox in
            inbox.cancelled.insert(id)
            return inbox.needsWakeup()
        }
        if wake { multi?.wakeup() }
    }
}
