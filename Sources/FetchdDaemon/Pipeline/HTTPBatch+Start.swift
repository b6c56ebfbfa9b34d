import CurlKit
import FetchdConfig
import FetchdCore
import FetchdHandlers
import FetchdSnapshots
import Foundation

extension HTTPBatch {
    /// Step 2: the fetch of `index` has its slot. Prepares it and posts it to libcurl's driver;
    /// its deadline starts now (time spent waiting for the slot is not the handler's). Runs on
    /// the thread that freed the slot, usually the driver's as another transfer ends: short
    /// calls on the cache's file system (a folder made, `latest` read, the output file opened;
    /// a handler's meta.json read once after a start).
    func start(_ index: Int) {
        let fetch = fetches[index]
        let stopping = progress.withLock { progress in
            if progress.waiting.removeValue(forKey: index) == nil { progress.grantedEarly.insert(index) }
            return progress.stopping
        }
        guard !stopping else {
            releaseSlot(fetch.key)
            return notStarted(index)
        }
        let handler = handlers[fetch.place]
        let trigger = trigger(of: handler)
        let startedAt = Date()
        let deadline = ContinuousClock.now + .milliseconds(Int64(handler.deadlineSeconds * 1000))
        let snapshots = pipeline.snapshots
        // A fetch that cannot start fails at once, its slot given back.
        func fail(_ reason: String) {
            releaseSlot(fetch.key)
            let item = FetchPipeline.item(handler, trigger: trigger, startedAt: startedAt, result: .failed(reason: reason))
            ended(index, settle: { item })
        }
        let outputPath: String
        do throws(DurableFile.Failure) {
            outputPath = try snapshots.staging.versionPath(for: handler.name)
        } catch {
            return fail(FetchPipeline.stagingProblem(error, user: nil))
        }
        guard let http = HandlerFactory.makeHTTP(handler, client: pipeline.httpClient) else {
            snapshots.staging.discard(stagedFile: outputPath)
            return fail("not an http handler (a fetchd bug: report it)")
        }
        let current = snapshots.currentVersion(of: handler.name)
        // Conditional only when there is content to keep: a 304 without a snapshot would leave none.
        var validators = pipeline.validators(of: handler, current: .read(current), state: .read(states[handler.name]))
        if validators != nil, access(snapshots.latestContentPath(of: handler.name), F_OK) != 0 { validators = nil }
        // libcurl's own limit is a backstop a second later; the driver ends the transfer at the deadline.
        var request = http.request(outputPath: outputPath,
                                   timeoutMilliseconds: Int(handler.deadlineSeconds * 1000) + http.backstopMilliseconds,
                                   validators: validators)
        request.deadline = deadline
        let ending = Ended(index: index, handler: handler, http: http, trigger: trigger, outputPath: outputPath,
                          startedAt: startedAt, deadline: deadline, current: current, conditional: request.isConditional)
        let id = pipeline.httpClient.start(request) { self.transferEnded(ending, $0) }
        let cancel = progress.withLock { progress in
            guard progress.endedEarly.remove(index) == nil else { return false }
            progress.transfers[index] = id
            return progress.stopping
        }
        if cancel { pipeline.httpClient.cancel(id: id) }
    }

    /// What a transfer's end needs to settle it.
    struct Ended: Sendable {
        /// The fetch's place in the batch.
        let index: Int
        /// Its handler, as the wake chose it.
        let handler: HandlerConfig
        /// The handler's http side, which reads the response.
        let http: HTTPHandler
        /// Why it ran.
        let trigger: FetchTrigger
        /// Where the body went: `content` in its future version folder.
        let outputPath: String
        /// When it got its slot.
        let startedAt: Date
        /// Its deadline, on the monotonic clock.
        let deadline: ContinuousClock.Instant
        /// The version `latest` named when the fetch began.
        let current: String?
        /// Whether the request carried a validator (a 304 means something only then).
        let conditional: Bool
    }

    /// Step 3, on the driver thread: frees the slot (starting the next fetch) and hands the
    /// outcome to the commit queue, which settles it.
    private func transferEnded(_ fetch: Ended, _ result: Result<HTTPResponse, HTTPFailure>) {
        let finishedAt = Date()
        let stopping = progress.withLock { progress in
            if progress.transfers.removeValue(forKey: fetch.index) == nil { progress.endedEarly.insert(fetch.index) }
            return progress.stopping
        }
        releaseSlot(fetches[fetch.index].key)
        let outcome = Self.outcome(of: result, http: fetch.http, conditional: fetch.conditional, deadline: fetch.deadline,
                                   stopping: stopping)
        let pipeline = pipeline
        ended(fetch.index) {
            pipeline.settleNow(fetch.handler, outcome: outcome, outputPath: fetch.outputPath, trigger: fetch.trigger,
                               startedAt: fetch.startedAt, finishedAt: finishedAt,
                               knownDigest: outcome.contentDigest.map { ($0.sha256, $0.bytes) },
                               currentVersion: .read(fetch.current))
        }
    }

    /// What a transfer's end comes to, as the runner would have reported it: at or past the
    /// deadline it is `expired` whatever came back (the driver ends a transfer there);
    /// `cancelled` by a shutdown is interrupted; otherwise the handler's answer.
    static func outcome(of result: Result<HTTPResponse, HTTPFailure>, http: HTTPHandler, conditional: Bool,
                        deadline: ContinuousClock.Instant, stopping: Bool) -> FetchRunner.Outcome {
        guard ContinuousClock.now < deadline else { return FetchRunner.Outcome(completion: nil, expired: true) }
        switch result {
        case .success(let response):
            let answer = http.answer(to: response, conditional: conditional)
            return FetchRunner.Outcome(completion: answer.completion, contentDigest: answer.digest,
                                       serverAnswer: answer.server)
        case .failure(let failure):
            if failure == .cancelled && stopping { return FetchRunner.Outcome(completion: nil, interrupted: true) }
            return FetchRunner.Outcome(completion: .failed(reason: failure.description))
        }
    }
}
