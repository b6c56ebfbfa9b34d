import CCurlShim
import Synchronization

extension HTTPClient {
    /// The driver thread's side: owns the multi handle's transfers and is the only code that
    /// touches libcurl handles (besides `curl_multi_wakeup`).
    final class Driver: @unchecked Sendable {
        private let multi: CurlMulti
        private let mailbox: Mailbox
        /// Transfers libcurl is driving, by easy handle.
        private var active: [UnsafeMutableRawPointer: Active] = [:]
        /// Easy handles kept for the next transfers (libcurl keeps their buffers warm).
        private var idle: [CurlEasy] = []
        /// Idle handles kept beyond this are freed.
        private let maxIdle = 64
        /// The poll's wait with no transfer: as long as `curl_multi_poll` takes (about 24 days).
        static let idlePollMilliseconds = Int32.max

        /// A class, not a struct: the request has a dozen strings, and every copy of a struct
        /// (into the table, out of it, into `end`) retained and released them all.
        private final class Active {
            let id: Int
            let easy: CurlEasy
            let request: HTTPRequest
            let reply: Reply

            init(id: Int, easy: CurlEasy, request: HTTPRequest, reply: @escaping Reply) {
                self.id = id
                self.easy = easy
                self.request = request
                self.reply = reply
            }
        }

        init(multi: CurlMulti, mailbox: Mailbox) {
            self.multi = multi
            self.mailbox = mailbox
        }

        /// The loop: take new work, let libcurl move, hand out finished transfers, wait.
        func run() {
            while true {
                let (submitted, cancelled, limits, stopping) = mailbox.inbox.withLock { inbox in
                    defer {
                        inbox.submitted = []
                        inbox.cancelled = []
                        inbox.limits = nil
                        inbox.wakePending = true  // awake: it reads the inbox again before it sleeps
                    }
                    return (inbox.submitted, inbox.cancelled, inbox.limits, inbox.stopping)
                }
                if let limits { multi.apply(limits) }
                submitted.forEach(start)
                if stopping {
                    for transfer in active.values { end(transfer, with: .failure(.cancelled)) }
                    idle.removeAll()  // free the easy handles first: the share cannot go while they use it
                    return
                }
                if !cancelled.isEmpty {
                    for transfer in active.values where cancelled.contains(transfer.id) {
                        end(transfer, with: .failure(.cancelled))
                    }
                }
                multi.perform()
                for (handle, code) in multi.finished() {
                    guard let transfer = active[handle] else { continue }
                    end(transfer, with: transfer.easy.finish(code: code, request: transfer.request))
                }
                // libcurl's own timers wake the poll sooner when a transfer needs it; the second is
                // a backstop while transfers run. With none, nothing can happen until new work
                // arrives, which wakes the poll (`curl_multi_wakeup`): an idle daemon's driver
                // thread sleeps until then instead of waking every second.
                let nextDeadline = endPastDeadlines()
                // Asleep only with nothing posted since the inbox was read (work posted while it
                // was awake, such as the next fetch of a batch started as one ended, sent no wakeup).
                let sleeps = mailbox.inbox.withLock { inbox in
                    guard !inbox.hasWork else { return false }
                    inbox.wakePending = false  // what is posted from now on needs a wakeup
                    return true
                }
                if sleeps { multi.poll(timeoutMilliseconds: pollMilliseconds(until: nextDeadline)) }
            }
        }

        /// Ends the transfers whose `deadline` has passed (`.timeout`); returns the earliest
        /// deadline still ahead. A look over the running transfers (a few dozen) per turn of
        /// the loop: cheaper than a timer per fetch.
        private func endPastDeadlines() -> ContinuousClock.Instant? {
            let now = ContinuousClock.now
            var next: ContinuousClock.Instant?
            var past: [Active] = []
            for transfer in active.values {
                guard let deadline = transfer.request.deadline else { continue }
                if deadline <= now { past.append(transfer) } else { next = min(next ?? deadline, deadline) }
            }
            for transfer in past { end(transfer, with: .failure(.timeout("the deadline passed"))) }
            return next
        }

        /// How long the poll may wait: until new work (a wakeup) or libcurl's own timers, and
        /// no later than `deadline`; with transfers running, at most a second (a backstop).
        private func pollMilliseconds(until deadline: ContinuousClock.Instant?) -> Int32 {
            guard !active.isEmpty else { return Self.idlePollMilliseconds }
            guard let deadline else { return 1000 }
            // Rounded up: waking a moment early would only turn the loop once more.
            let microseconds = (deadline - .now) / .microseconds(1)
            return Int32(max(1, min(1000, (Int(microseconds) + 999) / 1000)))
        }

        /// Hands a submission to libcurl, or fails it at once.
        private func start(_ submission: Submission) {
            var request = submission.request
            // Time spent between submission and now counts against the transfer's limit.
            let waited = ContinuousClock.now - submission.submittedAt
            if let limit = request.timeoutMilliseconds { request.timeoutMilliseconds = limit - Int(waited / .milliseconds(1)) }
            guard (request.timeoutMilliseconds ?? 1) > 0 else {
                submission.reply(.failure(.timeout("the time limit passed before the transfer started")))
                return
            }
            do throws(HTTPFailure) {
                let easy: CurlEasy
                if Self.isReusable(request), let reused = idle.popLast() { easy = reused } else { easy = try CurlEasy() }
                do throws(HTTPFailure) {
                    try easy.prepare(request, share: multi.share)
                } catch {
                    recycle(easy, after: request)
                    throw error
                }
                let code = multi.add(easy)
                guard code == CURLM_OK else {
                    easy.abandon()
                    recycle(easy, after: request)
                    throw .other(code: Int(code.rawValue), message: String(cString: curl_multi_strerror(code)))
                }
                active[easy.handle] = Active(id: submission.id, easy: easy, request: request,
                                             reply: submission.reply)
            } catch {
                submission.reply(.failure(error))
            }
        }

        /// Takes a transfer off libcurl and resumes its caller.
        private func end(_ transfer: Active, with result: Result<HTTPResponse, HTTPFailure>) {
            multi.remove(transfer.easy)
            transfer.easy.abandon()
            active[transfer.easy.handle] = nil
            recycle(transfer.easy, after: transfer.request)
            transfer.reply(result)
        }

        /// Whether `request` may run on a used handle, and its handle be used again.
        ///
        /// Not one with its own receive buffer size (background transfers): libcurl 7.88 refuses
        /// `CURLOPT_BUFFERSIZE` (CURLE_BAD_FUNCTION_ARGUMENT) on a handle that still holds the
        /// buffer of an earlier transfer, which `curl_easy_reset` does not free; after an HTTP/2
        /// fetch, a cancelled one or a refused redirect the handle keeps it. And a handle
        /// keeping a buffer of another size must not serve a request of the default size.
        /// Such requests are rare: a fresh handle each costs nothing that matters.
        static func isReusable(_ request: HTTPRequest) -> Bool { request.receiveBufferBytes == nil }

        private func recycle(_ easy: CurlEasy, after request: HTTPRequest) {
            if Self.isReusable(request), idle.count < maxIdle { idle.append(easy) }
        }
    }
}
