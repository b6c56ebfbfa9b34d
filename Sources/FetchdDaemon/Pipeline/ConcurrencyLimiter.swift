import DequeModule
import Synchronization

/// Lets at most `limit` fetches run at once, and at most `perKeyLimit` of them with the same key
/// (the host of an http handler), so one slow host cannot take every slot while fetches of other
/// hosts wait. Waiters of one key are served in FIFO order; keys take turns.
/// A waiter whose task is cancelled (shutdown) stops waiting and is not granted a slot.
/// Waiters are tasks (`acquire(key:) async`) or callbacks (`acquire(key:granted:)`, a wake's
/// batch of http fetches, which has no task per fetch); both queue in the same turns.
///
/// A `Mutex` rather than an actor, because the cancellation handler runs synchronously and
/// must remove its waiter at once.
final class ConcurrencyLimiter: Sendable {
    private typealias Waiter = (id: Int, grant: @Sendable (Bool) -> Void)

    private struct State {
        var limit: Int
        var perKeyLimit: Int
        var running = 0
        var runningByKey: [String: Int] = [:]
        /// Waiters by key ("" for fetches without one), and the keys with waiters in turn order.
        var waiting: [String: Deque<Waiter>] = [:]
        var turns: Deque<String> = []
        var keyOfWaiter: [Int: String] = [:]
        var nextID = 0
        /// Ids handed out whose waiter is not queued yet, and those of them already cancelled.
        var notYetQueued: Set<Int> = []
        var cancelledBeforeWaiting: Set<Int> = []

        func hasRoom(for key: String) -> Bool {
            running < limit && (key.isEmpty || runningByKey[key, default: 0] < perKeyLimit)
        }

        mutating func take(_ key: String) {
            running += 1
            if !key.isEmpty { runningByKey[key, default: 0] += 1 }
        }

        /// Takes waiter `id` out of its key's queue; nil when it is not queued.
        mutating func remove(_ id: Int) -> Waiter? {
            guard let key = keyOfWaiter.removeValue(forKey: id),
                  let index = waiting[key]?.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = waiting[key]?.remove(at: index)
            if waiting[key]?.isEmpty == true {
                waiting[key] = nil
                turns.removeAll { $0 == key }
            }
            return waiter
        }

        /// Grants slots to waiters while there is room, keys taking turns.
        mutating func grant() -> [@Sendable (Bool) -> Void] {
            var granted: [@Sendable (Bool) -> Void] = []
            var skipped = 0
            while running < limit, skipped < turns.count {
                let key = turns.removeFirst()
                guard waiting[key] != nil else { continue }  // its last waiter left
                // Popped in place: copying the queue out of the dictionary made each grant O(n).
                guard hasRoom(for: key), let waiter = waiting[key]?.popFirst() else {
                    turns.append(key)  // this key is at its cap: look at the next one
                    skipped += 1
                    continue
                }
                skipped = 0
                take(key)
                keyOfWaiter[waiter.id] = nil
                granted.append(waiter.grant)
                if waiting[key]?.isEmpty == true { waiting[key] = nil } else { turns.append(key) }
            }
            return granted
        }
    }
    private let state: Mutex<State>

    /// A limiter of `limit` slots in all and `perKeyLimit` per key.
    init(limit: Int, perKeyLimit: Int = .max) {
        state = Mutex(State(limit: max(1, limit), perKeyLimit: max(1, perKeyLimit)))
    }

    /// The limit in force: how many holders at once.
    var limit: Int { state.withLock { $0.limit } }

    /// Changes the limits (a reload); running fetches keep their slots, waiters may get new ones.
    func resize(to newLimit: Int, perKeyLimit: Int = .max) {
        let granted = state.withLock { state in
            state.limit = max(1, newLimit)
            state.perKeyLimit = max(1, perKeyLimit)
            return state.grant()
        }
        granted.forEach { $0(true) }
    }

    /// Waits for a slot for `key`. Returns false when cancelled while waiting (no slot is held then).
    func acquire(key: String = "") async -> Bool {
        let id: Int? = state.withLock { state in
            if state.hasRoom(for: key), state.waiting[key] == nil {
                state.take(key)
                return nil
            }
            defer { state.nextID += 1 }
            state.notYetQueued.insert(state.nextID)
            return state.nextID
        }
        guard let id else { return true }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = state.withLock { state -> Bool? in
                    state.notYetQueued.remove(id)
                    if state.cancelledBeforeWaiting.remove(id) != nil { return false }
                    // A release between the first look and now may have freed a slot that no
                    // queued waiter could take: take it, or this waiter could wait forever.
                    if state.hasRoom(for: key), state.waiting[key] == nil {
                        state.take(key)
                        return true
                    }
                    if state.waiting[key] == nil { state.turns.append(key) }
                    state.waiting[key, default: []].append((id, { continuation.resume(returning: $0) }))
                    state.keyOfWaiter[id] = key
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                // Not queued yet: tell the queueing code. Already granted: nothing to undo.
                if state.notYetQueued.contains(id) { state.cancelledBeforeWaiting.insert(id) }
                return state.remove(id)
            }
            waiter?.grant(false)
        }
    }

    /// Takes a slot for `key` and calls `granted` once it has one: at once, on this thread, when
    /// there is room, else on the thread that frees a slot (so `granted` must not block). Returns
    /// the waiter's id while it waits (nil: granted at once), for `withdraw(_:)`.
    @discardableResult
    func acquire(key: String = "", granted: @escaping @Sendable () -> Void) -> Int? {
        let id: Int? = state.withLock { state in
            if state.hasRoom(for: key), state.waiting[key] == nil {
                state.take(key)
                return nil
            }
            defer { state.nextID += 1 }
            if state.waiting[key] == nil { state.turns.append(key) }
            state.waiting[key, default: []].append((state.nextID, { _ in granted() }))
            state.keyOfWaiter[state.nextID] = key
            return state.nextID
        }
        if id == nil { granted() }
        return id
    }

    /// Takes waiter `id` (of `acquire(key:granted:)`) out of the queue: true when it was still
    /// waiting, and will now never be granted; false when it has been granted already.
    func withdraw(_ id: Int) -> Bool {
        state.withLock { $0.remove(id) } != nil
    }

    /// Returns the slot taken for `key`, handing it on to a waiter if one may have it.
    func release(key: String = "") {
        let granted = state.withLock { state in
            state.running -= 1
            if !key.isEmpty {
                let left = state.runningByKey[key, default: 1] - 1
                state.runningByKey[key] = left > 0 ? left : nil
            }
            return state.grant()
        }
        granted.forEach { $0(true) }
    }
}
