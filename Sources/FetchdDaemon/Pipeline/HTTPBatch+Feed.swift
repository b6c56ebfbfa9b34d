import FetchdConfig
import FetchdCore
import Foundation

extension HTTPBatch {
    /// Hands fetches to the slots while the window has room (all of them once stopping: those
    /// are recorded as never started).
    func feed() {
        while true {
            let fed: (index: Int, stopping: Bool)? = progress.withLock { progress in
                while progress.takenOver.remove(progress.next) != nil { progress.next += 1 }
                guard progress.next < fetches.count, progress.open < window || progress.stopping else { return nil }
                defer { progress.next += 1 }
                progress.open += 1
                return (progress.next, progress.stopping)
            }
            guard let fed else { return }
            if fed.stopping {
                notStarted(fed.index)
                continue
            }
            guard let waiter = pipeline.httpSlots.acquire(key: fetches[fed.index].key, granted: { self.start(fed.index) }) else {
                progress.withLock { _ = $0.grantedEarly.remove(fed.index) }  // granted at once, on this thread
                continue
            }
            let withdraw = progress.withLock { progress in
                guard progress.grantedEarly.remove(fed.index) == nil else { return false }  // granted already
                progress.waiting[fed.index] = waiter
                return progress.stopping
            }
            if withdraw, pipeline.httpSlots.withdraw(waiter) { notStarted(fed.index) }
        }
    }

    /// Stops the batch: fetches waiting for a slot or not fed are recorded as never started,
    /// running transfers end (`cancelled`, recorded as stopped by the shutdown).
    func stop() {
        let (waiting, transfers) = progress.withLock { progress in
            progress.stopping = true
            defer { progress.waiting = [:] }
            return (progress.waiting, Array(progress.transfers.values))
        }
        for (index, waiter) in waiting where pipeline.httpSlots.withdraw(waiter) { notStarted(index) }
        transfers.forEach { pipeline.httpClient.cancel(id: $0) }
        feed()
    }

    /// Takes fetch `index` out of the batch for a fetch asked for meanwhile, which runs it at once
    /// instead of waiting for its turn in a wake of thousands. True when the batch had not started
    /// it (it is then neither started nor recorded here); false when it has, or is stopping: the
    /// caller joins it then.
    func takeOver(_ index: Int) -> Bool {
        enum Place { case notFed, waiting(Int), started }
        let place: Place = progress.withLock { progress in
            if progress.stopping { return .started }
            if index >= progress.next {
                progress.takenOver.insert(index)
                return .notFed
            }
            return progress.waiting[index].map { .waiting($0) } ?? .started
        }
        switch place {
        case .started:
            return false
        case .waiting(let waiter):
            guard pipeline.httpSlots.withdraw(waiter) else { return false }  // granted meanwhile
            progress.withLock { progress in
                progress.waiting[index] = nil
                progress.open -= 1
            }
            feed()
        case .notFed:
            break
        }
        let reader = progress.withLock { progress in
            progress.unrecorded -= 1
            return progress.readerToWake()
        }
        reader?.resume()
        return true
    }

    /// A fetch that never got its slot: recorded as stopped before it started.
    func notStarted(_ index: Int) {
        let handler = handlers[fetches[index].place]
        let item = FetchPipeline.item(handler, trigger: trigger(of: handler), startedAt: Date(),
                                      result: FetchPipeline.stoppedBeforeStart)
        ended(index, settle: { item })
    }

    /// The transfer of `index` has ended (or never began): its outcome goes to the commit queue.
    func ended(_ index: Int, settle: @escaping @Sendable () -> ResultCommitter.Item) {
        pipeline.committer.commit(settling: settle) { record in self.recorded(index, record) }
    }

    /// Gives back a slot a fetch held. A release grants the next waiter at once, on this stack,
    /// and that fetch's start may fail and release in turn (a full disk fails every one): a
    /// release asked for while another is under way is queued and made by that one, in a loop,
    /// so a run of failures never nests.
    func releaseSlot(_ key: String) {
        let first = progress.withLock { progress in
            progress.releases.append(key)
            defer { progress.releasing = true }
            return !progress.releasing
        }
        guard first else { return }
        while let key = progress.withLock({ progress -> String? in
            guard !progress.releases.isEmpty else {
                progress.releasing = false
                return nil
            }
            return progress.releases.removeFirst()
        }) {
            pipeline.httpSlots.release(key: key)
        }
    }
}
